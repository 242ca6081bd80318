import type { SessionState } from "./session-state.js";

/**
 * Tokens from the server's own counts, not guesses. Every response reports how
 * many tokens the prompt was (cache_n + prompt_n), and a refused prompt
 * reports n_prompt_tokens; set against the bytes that were sent, that gives
 * the session's real bytes per token, which is then used for what was
 * appended since. Until the server has counted anything, the estimate is
 * pessimistic (3 bytes per token) and is only ever used to decide whether to
 * fold old turns, never to compact a session that has nothing old to fold.
 */
const measured = new WeakMap<SessionState, { bytes: number; tokens: number }>();

export const DEFAULT_BYTES_PER_TOKEN = 3;

/** Records what the server counted for a prompt of `bytes` bytes. */
export function recordPromptCount(st: SessionState, bytes: number, tokens: number): void {
  if (bytes > 0 && tokens > 0) measured.set(st, { bytes, tokens });
}

/** The session's bytes per token as the server counted them, with a 10% margin; the default when nothing was counted. */
export function bytesPerToken(st: SessionState): number {
  const m = measured.get(st);
  if (!m) return DEFAULT_BYTES_PER_TOKEN;
  return Math.max(1, m.bytes / m.tokens / 1.1);
}

export function isMeasured(st: SessionState): boolean {
  return measured.has(st);
}

/** Tokens of a JSON text in this session, from the measured ratio. */
export function tokensOf(st: SessionState, json: string): number {
  return Math.ceil(Buffer.byteLength(json) / bytesPerToken(st)) + 8;
}
