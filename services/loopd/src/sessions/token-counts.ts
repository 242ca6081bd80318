import type { Tally } from "./epoch-view.js";
import type { SessionState } from "./session-state.js";

/**
 * Tokens from the server's own counts, not guesses. Every response reports how
 * many tokens the prompt was (cache_n + prompt_n), and a refused prompt
 * reports n_prompt_tokens; set against the bytes that were sent, that gives
 * the session's real bytes per token, which is then used for what was
 * appended since. Until the server has counted anything, the estimate is
 * pessimistic (3 bytes per token) and is only ever used to decide whether to
 * fold old turns, never to compact a session that has nothing old to fold.
 * The count is kept in the session's `served` facts: this process's, not the log's.
 */
export const DEFAULT_BYTES_PER_TOKEN = 3;

/** What a message costs beyond its text (the template's role markers), in tokens. */
const PER_MESSAGE = 8;

/** Records what the server counted for a prompt of `bytes` bytes. */
export function recordPromptCount(st: SessionState, bytes: number, tokens: number): void {
  if (bytes > 0 && tokens > 0) st.served.measured = { bytes, tokens };
}

/** The session's bytes per token as the server counted them, with a 10% margin; the default when nothing was counted. */
export function bytesPerToken(st: SessionState): number {
  const m = st.served.measured;
  if (!m) return DEFAULT_BYTES_PER_TOKEN;
  return Math.max(1, m.bytes / m.tokens / 1.1);
}

export function isMeasured(st: SessionState): boolean {
  return st.served.measured !== undefined;
}

/** Tokens of a JSON text in this session, from the measured ratio. */
export function tokensOf(st: SessionState, json: string): number {
  return Math.ceil(Buffer.byteLength(json) / bytesPerToken(st)) + PER_MESSAGE;
}

/**
 * Tokens of messages known by their count and total bytes. At least what
 * tokensOf summed over each would be (each rounds up by less than one token),
 * so the estimate stays an over-estimate without walking the messages.
 */
function tokensOfTally(st: SessionState, t: Readonly<Tally>): number {
  if (t.count === 0) return 0;
  return Math.ceil(t.bytes / bytesPerToken(st)) + (PER_MESSAGE + 1) * t.count;
}

/** The tokens of what was appended since the model's last answer. */
export function tokensSinceAnswer(st: SessionState): number {
  return tokensOfTally(st, st.view.sinceAnswer);
}

/**
 * The prompt tokens the server will probably have to read for the next
 * request (an over-estimate, from bytes): the messages after the last model
 * response when the slot holds the session's conversation, else the whole
 * prompt (a new session, a new epoch).
 */
export function estimateNewPromptTokens(st: SessionState): number {
  if (st.contextTokens > 0) return tokensSinceAnswer(st);
  return tokensOf(st, st.epoch.systemJson) + tokensOf(st, st.epoch.toolsJson) + tokensOfTally(st, st.view.tally);
}

/** The bytes of the next request's prompt (messages and tools), set against the server's count of its tokens. */
export function promptBytes(st: SessionState): number {
  return st.view.bytes + Buffer.byteLength(st.epoch.toolsJson);
}
