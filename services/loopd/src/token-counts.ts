import { messagesBytes } from "./epoch-view.js";
import { replayJson } from "./replay.js";
import { epochMessages, lastAssistantIndex, type SessionState } from "./session-state.js";

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

/**
 * The prompt tokens the server will probably have to read for the next
 * request (an over-estimate, from bytes): the messages after the last model
 * response when the slot holds the session's conversation, else the whole
 * prompt (a new session, a new epoch).
 */
export function estimateNewPromptTokens(st: SessionState): number {
  const messages = epochMessages(st);
  if (st.contextTokens > 0) {
    return messages.slice(lastAssistantIndex(messages) + 1).reduce((a, m) => a + tokensOf(st, m.json), 0);
  }
  return (
    tokensOf(st, st.epoch.systemJson) +
    tokensOf(st, st.epoch.toolsJson) +
    messages.reduce((a, m) => a + tokensOf(st, replayJson(m)), 0)
  );
}

/** The bytes of the next request's prompt (messages and tools), set against the server's count of its tokens. */
export function promptBytes(st: SessionState): number {
  return messagesBytes(st) + Buffer.byteLength(st.epoch.toolsJson);
}
