// Chunk and response shapes, field for field and in the order the recordings
// show them: clients that parse loosely would not notice a difference, but
// replay tests and byte-level comparisons would.

import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";

const JSON_TYPE = "application/json; charset=utf-8";
const SSE_TYPE = "text/event-stream";

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** 32 random alphanumerics, the form of the real server's completion and tool-call ids. */
export function randomId(): string {
  const bytes = randomBytes(32);
  let out = "";
  for (const b of bytes) out += ALNUM[b % ALNUM.length];
  return out;
}

export interface ChunkBase {
  id: string;
  created: number;
  model: string;
  systemFingerprint: string;
}

export interface PromptProgress {
  total: number;
  cache: number;
  processed: number;
  time_ms: number;
}

export interface Timings {
  cache_n: number;
  prompt_n: number;
  prompt_ms: number;
  prompt_per_token_ms: number;
  prompt_per_second: number;
  predicted_n: number;
  predicted_ms: number;
  predicted_per_token_ms: number;
  predicted_per_second: number;
}

export function chunk(
  base: ChunkBase,
  delta: Record<string, unknown>,
  finishReason: string | null = null,
  extra: { prompt_progress?: PromptProgress; timings?: Timings } = {},
): Record<string, unknown> {
  return {
    choices: [{ finish_reason: finishReason, index: 0, delta }],
    created: base.created,
    id: base.id,
    model: base.model,
    system_fingerprint: base.systemFingerprint,
    object: "chat.completion.chunk",
    ...extra,
  };
}

export const ROLE_DELTA = { role: "assistant", content: null } as const;

export function errorBody(code: number, message: string, type: string, extra: Record<string, unknown> = {}) {
  return { error: { code, message, type, ...extra } };
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": JSON_TYPE, "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

/** Writes SSE events; headers go out with the first event, as the real server sends them. */
export class SseWriter {
  constructor(private readonly res: ServerResponse) {}

  get open(): boolean {
    return !this.res.destroyed && !this.res.writableEnded;
  }

  private head(): void {
    // No Content-Length: the body is streamed chunked, never buffered.
    if (!this.res.headersSent) this.res.writeHead(200, { "Content-Type": SSE_TYPE });
  }

  event(data: unknown): void {
    if (!this.open) return;
    this.head();
    this.res.write(`data: ${JSON.stringify(data)}\n\n`);
  }

  done(): void {
    if (!this.open) return;
    this.head();
    this.res.end("data: [DONE]\n\n");
  }

  end(): void {
    if (!this.open) return;
    this.head();
    this.res.end();
  }
}

export function makeTimings(
  cacheN: number,
  promptN: number,
  promptMs: number,
  predictedN: number,
  predictedMs: number,
): Timings {
  // Rates are derived from the reported (rounded) times so they agree with them.
  const pMs = round3(promptMs);
  const gMs = round3(predictedMs);
  // llama.cpp does not count the first generated token (sampled from the
  // prompt pass) in its generation rates; the recordings show n-1.
  const gN = Math.max(predictedN - 1, 1);
  return {
    cache_n: cacheN,
    prompt_n: promptN,
    prompt_ms: pMs,
    prompt_per_token_ms: pMs / Math.max(promptN, 1),
    prompt_per_second: (1000 * promptN) / pMs,
    predicted_n: predictedN,
    predicted_ms: gMs,
    predicted_per_token_ms: gMs / gN,
    predicted_per_second: (1000 * gN) / gMs,
  };
}

/** Milliseconds to the microsecond, never 0 (the rates divide by it). */
function round3(x: number): number {
  return Math.max(Math.round(x * 1000) / 1000, 0.001);
}
