// POST /v1/chat/completions: parse and check the request as llama-server does,
// pick and hold the slot, then hand the run to completion-run.ts.

import type { ServerResponse } from "node:http";
import { runCompletion } from "./completion-run.js";
import { renderPrompt, type ChatMessage } from "./render.js";
import { defaultTurn } from "./script.js";
import { pickSlot } from "./slot-cache.js";
import { errorBody, sendJson } from "./sse.js";
import type { RequestLogEntry, SimState } from "./state.js";
import { tokenize } from "./tokens.js";

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
