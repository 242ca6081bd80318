import { replayJson } from "../sessions/replay.js";
import type { StoredMessage } from "../sessions/session-state.js";
import { DEFAULT_BYTES_PER_TOKEN } from "../sessions/token-counts.js";

/**
 * When to compact and what to keep: pure decisions over stored messages and
 * numbers, so they can be tested without a model or a session log.
 */

/** Roughly how many tokens a JSON message text adds, before the server has counted anything. */
export const estimateTokens = (json: string) => Math.ceil(Buffer.byteLength(json) / DEFAULT_BYTES_PER_TOKEN) + 8;

/**
 * Whether the next request might overflow: what the slot held after the last
 * response (the server's own count) plus what was appended since (its tokens
 * at the session's measured bytes per token, or the messages to count them
 * from), plus room for the answer.
 */
export function needsCompaction(
  contextTokens: number,
  appendedSince: readonly StoredMessage[] | number,
  maxTokens: number,
  nCtx: number,
  threshold: number,
  tokens: (json: string) => number = estimateTokens,
): boolean {
  if (!nCtx) return false;
  const appended =
    typeof appendedSince === "number" ? appendedSince : appendedSince.reduce((a, m) => a + tokens(m.json), 0);
  const next = contextTokens + appended;
  return next + Math.min(maxTokens, nCtx / 4) > nCtx * threshold;
}

/**
 * The messages kept verbatim in the new epoch: the most recent ones, starting
 * at a user message so no tool result is separated from its call.
 */
export function recentToKeep(messages: readonly StoredMessage[], keep: number): StoredMessage[] {
  const roles = messages.map((m) => (JSON.parse(m.json) as { role?: string }).role);
  const lastUser = roles.lastIndexOf("user");
  let start = Math.max(0, messages.length - keep);
  while (start < messages.length && roles[start] !== "user") start++;
  // The running turn is never cut: its question must survive into the new epoch.
  if (lastUser >= 0) start = Math.min(start, lastUser);
  return messages.slice(start);
}

/** A quarter of the context in bytes: the most a carried fold text or a carried message may take. */
export function quarterContextBytes(nCtx: number, bytesPerToken: number): number {
  return Math.floor((nCtx * bytesPerToken) / 4);
}

/**
 * The folded turns as a plain transcript, for a summary request that cannot
 * reuse the slot's cache: each message clipped to its share of `budgetBytes`
 * (keeping its start and end), and no more lines than the budget holds.
 */
export function clippedTranscript(folded: readonly StoredMessage[], budgetBytes: number): string[] {
  const per = Math.max(400, Math.floor(budgetBytes / Math.max(1, folded.length)));
  const lines: string[] = [];
  let used = 0;
  for (const m of folded) {
    const msg = JSON.parse(replayJson(m)) as { role?: string; content?: unknown; tool_calls?: unknown };
    let text = typeof msg.content === "string" ? msg.content : JSON.stringify(msg.content ?? "");
    if (msg.tool_calls) text += ` [tool calls: ${JSON.stringify(msg.tool_calls)}]`;
    if (text.length > per) text = `${text.slice(0, per / 2)} […] ${text.slice(-per / 2)}`;
    const line = `${msg.role}: ${text}`;
    if (used + line.length > budgetBytes) break;
    lines.push(line);
    used += line.length;
  }
  return lines;
}
