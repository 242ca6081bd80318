// POST /v1/chat/completions: render, account the prompt cache, prefill with
// progress events, then play the scripted turn as token deltas.

import type { ServerResponse } from "node:http";
import { renderPrompt, type ChatMessage } from "./render.js";
import { defaultTurn, type Turn } from "./script.js";
import type { Slot, SlotTaskInfo } from "./slot-cache.js";
import { pickSlot } from "./slot-cache.js";
import {
  chunk,
  errorBody,
  makeTimings,
  randomId,
  ROLE_DELTA,
  sendJson,
  SseWriter,
  type ChunkBase,
  type PromptProgress,
} from "./sse.js";
import type { RequestLogEntry, SimState } from "./state.js";
import { tokenize } from "./tokens.js";
import { taskParams } from "./props.js";

/** Resolves after ms, or early when the signal aborts. 0 ms still yields to the event loop. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    let timer: NodeJS.Timeout | undefined;
    let immediate: NodeJS.Immediate | undefined;
    const done = () => {
      if (timer) clearTimeout(timer);
      if (immediate) clearImmediate(immediate);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    if (ms > 0) timer = setTimeout(done, ms);
    else immediate = setImmediate(done);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * nlohmann::json's wording, which llama-server passes through in its 500.
 * Clients only see the prefix and the position; the detail is JS's own.
 */
export function jsonParseError(raw: string, err: unknown): string {
  const detail = err instanceof Error ? err.message : String(err);
  const m = /position (\d+)/.exec(detail);
  const pos = m ? Number(m[1]) : raw.length;
  const before = raw.slice(0, pos + 1);
  const line = before.split("\n").length;
  const column = pos + 1 - (before.lastIndexOf("\n") + 1);
  return `[json.exception.parse_error.101] parse error at line ${line}, column ${column}: syntax error while parsing value - ${detail}; last read: '${before.slice(-16)}'`;
}

function splitPieces(text: string | string[] | undefined): string[] {
  if (text === undefined) return [];
  if (Array.isArray(text)) return text;
  return tokenize(text);
}

function chunkChars(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

interface ToolDeltaPlan {
  index: number;
  id: string;
  name: string;
  pieces: string[];
}

function planToolCalls(turn: Turn): ToolDeltaPlan[] {
  return (turn.toolCalls ?? []).map((call, index) => {
    let pieces: string[];
    if (Array.isArray(call.arguments)) pieces = call.arguments;
    else if (turn.argumentChunkSize && turn.argumentChunkSize > 0)
      pieces = chunkChars(call.arguments, turn.argumentChunkSize);
    else pieces = tokenize(call.arguments);
    // The first delta carries the name even when there are no arguments yet.
    if (pieces.length === 0) pieces = [""];
    return { index, id: call.id ?? randomId(), name: call.name, pieces };
  });
}

function maxTokensOf(body: Record<string, unknown>): number {
  for (const k of ["max_tokens", "max_completion_tokens", "n_predict"]) {
    const v = body[k];
    if (typeof v === "number" && Number.isFinite(v)) return Math.trunc(v);
  }
  return -1;
}

export async function handleChatCompletion(
  state: SimState,
  res: ServerResponse,
  raw: string,
  entry: RequestLogEntry,
): Promise<void> {
  const reply = (status: number, body: unknown) => {
    entry.status = status;
    entry.finishedAt = Date.now();
    sendJson(res, status, body);
  };

  let body: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(raw);
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("body is not a JSON object");
    body = parsed as Record<string, unknown>;
  } catch (err) {
    // llama-server answers a body it cannot parse with 500, not 400 (error-bad-json).
    return reply(500, errorBody(500, jsonParseError(raw, err), "server_error"));
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) {
    return reply(400, errorBody(400, "'messages' is required and must be a non-empty array", "invalid_request_error"));
  }
  const tools = Array.isArray(body.tools) ? (body.tools as unknown[]) : undefined;
  const stream = body.stream === true;
  const returnProgress = body.return_progress === true;
  const reasoningControl = body.reasoning_control === true;
  const maxTokens = maxTokensOf(body);
  entry.stream = stream;

  const rendered = renderPrompt(messages as ChatMessage[], tools, { thinkBlocks: state.config.thinkBlocks });
  const promptTokens = tokenize(rendered.text);
  entry.promptTokens = promptTokens.length;
  const idSlot = typeof body.id_slot === "number" ? Math.trunc(body.id_slot) : undefined;
  // Pick and acquire in the same tick, so two requests never pick the same idle slot.
  const slot = pickSlot(state.slots, idSlot);
  entry.slot = slot.id;
  if (promptTokens.length > slot.nCtx) {
    // Checked before any SSE: the real server answers 400 JSON even when stream is true.
    const n = promptTokens.length;
    return reply(
      400,
      errorBody(
        400,
        `request (${n} tokens) exceeds the available context size (${slot.nCtx} tokens), try increasing it`,
        "exceed_context_size_error",
        { n_prompt_tokens: n, n_ctx: slot.nCtx },
      ),
    );
  }

  const abort = new AbortController();
  const onClose = () => {
    if (!res.writableEnded) abort.abort();
  };
  res.on("close", onClose);
  const leave = slot.arrive();
  const release = await slot.acquire(abort.signal);
  if (!release) {
    leave();
    entry.outcome = "aborted";
    entry.finishedAt = Date.now();
    return;
  }
  try {
    const turn = state.script.next(slot.id) ?? defaultTurn(messages as ChatMessage[]);
    entry.turn = turn;
    if (turn.httpError) {
      entry.outcome = "http_error";
      return reply(turn.httpError.status, turn.httpError.body);
    }
    await runCompletion(state, slot, res, entry, {
      body,
      messages: messages as ChatMessage[],
      tools,
      rendered,
      promptTokens,
      stream,
      returnProgress,
      reasoningControl,
      maxTokens,
      turn,
      signal: abort.signal,
    });
  } finally {
    res.off("close", onClose);
    release();
    leave();
  }
}

interface RunArgs {
  body: Record<string, unknown>;
  messages: ChatMessage[];
  tools: unknown[] | undefined;
  rendered: ReturnType<typeof renderPrompt>;
  promptTokens: string[];
  stream: boolean;
  returnProgress: boolean;
  reasoningControl: boolean;
  maxTokens: number;
  turn: Turn;
  signal: AbortSignal;
}

async function runCompletion(state: SimState, slot: Slot, res: ServerResponse, entry: RequestLogEntry, a: RunArgs) {
  const { turn, signal } = a;
  const id = `chatcmpl-${randomId()}`;
  entry.completionId = id;
  const model = typeof a.body.model === "string" && a.body.model ? a.body.model : state.config.modelPath;
  const base: ChunkBase = {
    id,
    created: Math.floor(Date.now() / 1000),
    model,
    systemFingerprint: state.config.buildInfo,
  };
  const sse = a.stream ? new SseWriter(res) : undefined;
  const idTask = state.nextTaskId();

  let reasoningEnded = false;
  state.active.set(id, {
    id,
    reasoningControl: a.reasoningControl,
    endReasoning: () => {
      if (!a.reasoningControl) return false;
      reasoningEnded = true;
      return true;
    },
  });

  const total = a.promptTokens.length;
  const cacheN = a.body.cache_prompt === false ? 0 : slot.cachedPrefix(a.promptTokens);
  const promptN = total - cacheN;
  entry.cacheN = cacheN;

  // What was generated, kept as the client will echo it back.
  let content = "";
  let reasoning = "";
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  let emitted = 0;
  let roleSent = false;
  let processed = cacheN;
  // Tokens decoded but not streamed (quietMs): the real server's parser holding output back.
  let held = 0;
  // While it runs, GET /slots shows this task with live counters, as the real server does.
  const live: SlotTaskInfo = {
    idTask,
    nPromptTokens: total,
    nPromptTokensProcessed: 0,
    nPromptTokensCache: cacheN,
    nDecoded: 0,
    params: taskParams(a.body, a.maxTokens),
  };
  slot.lastTask = live;

  const finishSlot = () => {
    const echo: ChatMessage = {
      role: "assistant",
      content: (a.rendered.prefill ? a.rendered.prefillContent : "") + content,
      ...(reasoning ? { reasoning_content: reasoning } : {}),
      ...(calls.length
        ? {
            tool_calls: calls.map((c) => ({
              id: c.id,
              type: "function",
              function: { name: c.name, arguments: c.arguments },
            })),
          }
        : {}),
    };
    if (processed < total) {
      // Left during prefill: the cache holds what was processed.
      slot.tokens = a.promptTokens.slice(0, processed);
    } else {
      const history = a.rendered.prefill ? a.messages.slice(0, -1) : a.messages;
      const prevReasoning = a.rendered.prefill ? a.messages[a.messages.length - 1]?.reasoning_content : undefined;
      if (prevReasoning && !reasoning) echo.reasoning_content = prevReasoning;
      slot.tokens = tokenize(
        renderPrompt([...history, echo], a.tools, { thinkBlocks: state.config.thinkBlocks, addGenerationPrompt: false })
          .text,
      );
    }
    slot.lastTask = {
      idTask,
      nPromptTokens: total,
      nPromptTokensProcessed: Math.max(0, processed - cacheN),
      nPromptTokensCache: cacheN,
      nDecoded: emitted,
      params: taskParams(a.body, a.maxTokens),
    };
    entry.output = { content, reasoning, toolCalls: calls.map((c) => ({ ...c })) };
    entry.finishedAt = Date.now();
    state.active.delete(id);
  };

  try {
    // Prefill.
    const tPrompt0 = performance.now();
    if (sse && a.rendered.prefill) sse.event(chunk(base, ROLE_DELTA));
    const progress = (p: number, delta: Record<string, unknown>) => {
      const pp: PromptProgress = {
        total,
        cache: cacheN,
        processed: p,
        time_ms: Math.round(performance.now() - tPrompt0),
      };
      sse?.event(chunk(base, delta, null, { prompt_progress: pp }));
    };
    if (sse && a.returnProgress) {
      // With prefill the first progress event carries the continued message (recording cache-2).
      progress(cacheN, a.rendered.prefill ? { content: a.rendered.prefillContent } : ROLE_DELTA);
    } else if (sse && a.rendered.prefill && a.rendered.prefillContent) {
      sse.event(chunk(base, { content: a.rendered.prefillContent }));
    }
    while (processed < total) {
      if (signal.aborted) break;
      await sleep(turn.prefillMsPerBatch ?? 0, signal);
      if (signal.aborted) break;
      processed = Math.min(total, processed + state.config.batchSize);
      live.nPromptTokensProcessed = processed - cacheN;
      if (sse && a.returnProgress) progress(processed, ROLE_DELTA);
    }
    const promptMs = performance.now() - tPrompt0;
    if (signal.aborted) {
      entry.outcome = "aborted";
      return;
    }
    slot.tokens = a.promptTokens.slice();

    // Generation.
    const tGen0 = performance.now();
    const limit = a.maxTokens > 0 ? a.maxTokens : Number.POSITIVE_INFINITY;
    const reasoningPieces = splitPieces(turn.reasoning);
    const contentPieces = splitPieces(turn.content);
    const toolPlans = planToolCalls(turn);
    let silenced = false;
    let quieted = false;
    let finish: string = turn.finishReason ?? (toolPlans.length > 0 ? "tool_calls" : "stop");
    type Stop = "length" | "error" | "drop" | "aborted" | undefined;

    const streamError = () => {
      const e = turn.errorInStream!;
      return errorBody(
        e.code ?? 500,
        e.message ?? "The model produced output that does not match the expected peg-native format",
        e.type ?? "server_error",
      );
    };

    // Faults fire once `emitted` reaches their token count; `atEnd` fires the ones the output never reached.
    const faults = async (atEnd: boolean): Promise<Stop> => {
      if (turn.silenceMs && !silenced && (atEnd || emitted >= (turn.silenceAfterTokens ?? 0))) {
        silenced = true;
        await sleep(turn.silenceMs, signal);
      }
      if (turn.quietMs && !quieted && (atEnd || emitted >= (turn.quietAfterTokens ?? 0))) {
        quieted = true;
        // Busy but silent: the slot keeps decoding (n_decoded rises) while nothing is streamed.
        const until = performance.now() + turn.quietMs;
        while (!signal.aborted && performance.now() < until) {
          await sleep(Math.min(20, Math.max(1, until - performance.now())), signal);
          held++;
          live.nDecoded = emitted + held;
        }
      }
      if (signal.aborted) return "aborted";
      if (turn.dropAfterTokens !== undefined && (atEnd || emitted >= turn.dropAfterTokens)) return "drop";
      const e = turn.errorInStream;
      if (e && (e.afterTokens === undefined ? atEnd : atEnd || emitted >= e.afterTokens)) return "error";
      return undefined;
    };

    const beforeToken = async (): Promise<Stop> => {
      const f = await faults(false);
      if (f) return f;
      if (emitted >= limit) return "length";
      await sleep(turn.tokenDelayMs ?? 0, signal);
      if (signal.aborted) return "aborted";
      if (sse && !roleSent) sse.event(chunk(base, ROLE_DELTA));
      roleSent = true;
      emitted++;
      live.nDecoded = emitted + held;
      return undefined;
    };

    const generate = async (): Promise<Stop> => {
      for (const piece of reasoningPieces) {
        if (reasoningEnded) break;
        const stop = await beforeToken();
        if (stop) return stop;
        reasoning += piece;
        sse?.event(chunk(base, { reasoning_content: piece }));
      }
      for (const piece of contentPieces) {
        const stop = await beforeToken();
        if (stop) return stop;
        content += piece;
        sse?.event(chunk(base, { content: piece }));
        entry.firstContentHrMs ??= performance.now();
      }
      for (const plan of toolPlans) {
        for (let i = 0; i < plan.pieces.length; i++) {
          const stop = await beforeToken();
          if (stop) return stop;
          const piece = plan.pieces[i]!;
          if (i === 0) {
            calls.push({ id: plan.id, name: plan.name, arguments: piece });
            sse?.event(
              chunk(base, {
                tool_calls: [
                  { index: plan.index, id: plan.id, type: "function", function: { name: plan.name, arguments: piece } },
                ],
              }),
            );
          } else {
            calls[calls.length - 1]!.arguments += piece;
            sse?.event(chunk(base, { tool_calls: [{ index: plan.index, function: { arguments: piece } }] }));
          }
        }
      }
      return faults(true);
    };

    const stop = await generate();
    const predictedMs = performance.now() - tGen0;
    if (stop === "aborted") {
      entry.outcome = "aborted";
      return;
    }
    if (stop === "drop") {
      // A scripted crash of the connection, not a polite end of stream.
      entry.outcome = "dropped";
      res.destroy();
      return;
    }
    if (stop === "error") {
      entry.outcome = "error_in_stream";
      const err = streamError();
      if (sse) {
        entry.status = 200;
        sse.event(err);
        sse.end();
      } else {
        entry.status = err.error.code;
        sendJson(res, err.error.code, err);
      }
      return;
    }
    if (stop === "length") finish = "length";
    // The end-of-generation token counts as predicted unless the limit cut generation short.
    const predictedN = emitted + (finish === "length" ? 0 : 1);
    const timings = makeTimings(cacheN, promptN, promptMs, predictedN, predictedMs);
    entry.timings = timings;
    entry.finishReason = finish;
    entry.outcome = "completed";
    entry.status = 200;
    if (sse) {
      if (!roleSent) sse.event(chunk(base, ROLE_DELTA));
      sse.event(chunk(base, {}, finish, { timings }));
      sse.done();
      return;
    }
    const message: Record<string, unknown> = {
      role: "assistant",
      content: (a.rendered.prefill ? a.rendered.prefillContent : "") + content,
    };
    if (reasoning) message.reasoning_content = reasoning;
    if (calls.length > 0) {
      message.tool_calls = calls.map((c) => ({
        type: "function",
        function: { name: c.name, arguments: c.arguments },
        id: c.id,
      }));
    }
    sendJson(res, 200, {
      choices: [{ finish_reason: finish, index: 0, message }],
      created: base.created,
      model: base.model,
      system_fingerprint: base.systemFingerprint,
      object: "chat.completion",
      usage: {
        completion_tokens: predictedN,
        prompt_tokens: total,
        total_tokens: total + predictedN,
        prompt_tokens_details: { cached_tokens: cacheN },
      },
      id,
      timings,
    });
  } finally {
    finishSlot();
  }
}
