import { epochMessages, type SessionState } from "./session-state.js";

/**
 * The request's `messages` array, spliced from the stored JSON texts. Nothing
 * is parsed and re-serialized: the server's prompt cache only hits when every
 * earlier byte is exactly what it saw last time.
 */
export function buildMessagesJson(s: SessionState): string {
  const parts = [s.epoch.systemJson];
  for (const m of epochMessages(s)) parts.push(m.json);
  return `[${parts.join(",")}]`;
}
