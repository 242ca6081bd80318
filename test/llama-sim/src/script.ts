// Scripted model output. Tests decide what the "model" says; the simulator
// decides how it travels (token deltas, timings, cache accounting, faults).

import { contentText, type ChatMessage } from "./render.js";

export interface ScriptedToolCall {
  /** Tool-call id; a random 32-character id like the real server's when absent. */
  id?: string;
  name: string;
  /** The raw arguments text, streamed as is; a string array gives the exact deltas. */
  arguments: string | string[];
}

export interface StreamError {
  /** Generated tokens before the error; absent: in place of the final chunk. 0: before any token (error-parse-in-stream). */
  afterTokens?: number;
  code?: number;
  message?: string;
  type?: string;
}

export interface Turn {
  /** Thinking text, streamed as reasoning_content deltas; a string array gives the exact deltas. */
  reasoning?: string | string[];
  /** Answer text, streamed as content deltas; a string array gives the exact deltas. */
  content?: string | string[];
  toolCalls?: ScriptedToolCall[];
  /** Defaults: `tool_calls` when toolCalls are present, else `stop`; `length` when max_tokens cuts the output. */
  finishReason?: "stop" | "length" | "tool_calls";
  /** Delay before each generated token. Default 0 (the event loop still turns between tokens). */
  tokenDelayMs?: number;
  /** Characters per tool-call arguments delta; default one delta per token of the arguments. */
  argumentChunkSize?: number;
  /** Delay per 2,048-token prefill batch. Default 0. */
  prefillMsPerBatch?: number;
  /**
   * More delay per batch for each 1,000 tokens the slot already holds when the
   * batch starts: every token attends to all before it, so a batch deep in a
   * long context takes longer (measured: 1.8 s at depth 0, 6–7 s at 28k on the
   * tiny CPU model). Default 0.
   */
  prefillMsPer1kDepth?: number;
  /** Stay silent this long once silenceAfterTokens tokens are out (default 0: right after prefill). */
  silenceMs?: number;
  silenceAfterTokens?: number;
  /**
   * Decode without streaming for this long once quietAfterTokens tokens are out: the real
   * server's output parser holding output back. Unlike silenceMs (a hung server), GET /slots
   * shows the slot processing with n_decoded rising all the while.
   */
  quietMs?: number;
  quietAfterTokens?: number;
  /** Destroy the socket after this many generated tokens (0: right after prefill). */
  dropAfterTokens?: number;
  /**
   * The server process dies after this many generated tokens (0: right after
   * prefill): every connection is dropped, the socket stops answering for
   * `crashDownMs` (then `/health` is 503 for `crashLoadingMs`, a model
   * loading), and the server comes back with every slot's cache empty.
   */
  crashAfterTokens?: number;
  crashDownMs?: number;
  crashLoadingMs?: number;
  /** An error object inside the 200 stream, then the stream ends; non-streamed: that HTTP status. */
  errorInStream?: StreamError;
  /** Answer with this status and JSON body instead of generating. */
  httpError?: { status: number; body: unknown };
}

const TURN_KEYS: ReadonlySet<string> = new Set([
  "reasoning",
  "content",
  "toolCalls",
  "finishReason",
  "tokenDelayMs",
  "argumentChunkSize",
  "prefillMsPerBatch",
  "prefillMsPer1kDepth",
  "silenceMs",
  "silenceAfterTokens",
  "quietMs",
  "quietAfterTokens",
  "dropAfterTokens",
  "crashAfterTokens",
  "crashDownMs",
  "crashLoadingMs",
  "errorInStream",
  "httpError",
]);

/** Reject misspelled turn fields early: a typo would otherwise silently script nothing. */
export function validateTurn(turn: unknown): Turn {
  if (!turn || typeof turn !== "object" || Array.isArray(turn)) throw new Error("a turn must be an object");
  for (const key of Object.keys(turn)) {
    if (!TURN_KEYS.has(key)) throw new Error(`unknown turn field: ${key}`);
  }
  const t = turn as Turn;
  for (const call of t.toolCalls ?? []) {
    if (typeof call.name !== "string") throw new Error("tool call needs a name");
    if (typeof call.arguments !== "string" && !Array.isArray(call.arguments)) {
      throw new Error("tool call arguments must be a string (raw JSON text) or an array of deltas");
    }
  }
  return t;
}

/** FIFO of turns: per-slot queues are served before the shared one. */
export class ScriptQueue {
  private shared: Turn[] = [];
  private perSlot = new Map<number, Turn[]>();

  enqueue(turn: Turn, slot?: number): void {
    const t = validateTurn(turn);
    if (slot === undefined) {
      this.shared.push(t);
      return;
    }
    const q = this.perSlot.get(slot) ?? [];
    q.push(t);
    this.perSlot.set(slot, q);
  }

  next(slot: number): Turn | undefined {
    const q = this.perSlot.get(slot);
    if (q && q.length > 0) return q.shift();
    return this.shared.shift();
  }

  get pending(): number {
    let n = this.shared.length;
    for (const q of this.perSlot.values()) n += q.length;
    return n;
  }

  clear(): void {
    this.shared = [];
    this.perSlot.clear();
  }
}

/**
 * With nothing scripted the simulator still answers, so `boxmaker up` against
 * it works interactively; the answer names the last user message so a human
 * can see the round trip.
 */
export function defaultTurn(messages: readonly ChatMessage[]): Turn {
  let lastUser = "";
  for (const m of messages) if (m.role === "user") lastUser = contentText(m.content);
  const quoted = lastUser.length > 120 ? `${lastUser.slice(0, 117)}...` : lastUser;
  return {
    content: lastUser
      ? `This is llama-sim. You said: "${quoted}". Nothing is scripted, so this is the default answer.`
      : "This is llama-sim. Nothing is scripted, so this is the default answer.",
  };
}
