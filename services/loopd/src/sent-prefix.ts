import type { SessionState } from "./session-state.js";
import { buildMessagesJson, messageCount, messagesJsonAfter, sentPrefix, setSentPrefix } from "./epoch-view.js";

/*
 * What inferproxy remembers of a session's last request: the token it gave
 * that request's messages array and how many messages the array held. The
 * next request of the same epoch sends only the messages after those
 * (CompleteRequest.after_messages_token), so a long conversation crosses the
 * gRPC hop once, not on every request. Kept in memory with the epoch's view
 * (a new epoch forgets it): after a restart of either daemon the next request
 * sends the whole array again.
 */

export interface RequestMessages {
  messagesJson: string;
  afterMessagesToken: string;
  /** How many messages the whole array holds: remembered with the token the final event brings. */
  count: number;
}

/** The messages of the next request: only the new ones when inferproxy holds the rest, else all. */
export function requestMessages(s: SessionState, whole = false): RequestMessages {
  const count = messageCount(s);
  const p = sentPrefix(s);
  if (!whole && p && p.count <= count) {
    return { messagesJson: messagesJsonAfter(s, p.count), afterMessagesToken: p.token, count };
  }
  return { messagesJson: buildMessagesJson(s), afterMessagesToken: "", count };
}

/** Notes the token inferproxy gave the array `requestMessages` built (empty: it kept nothing). */
export function noteSent(s: SessionState, count: number, token: string): void {
  setSentPrefix(s, token ? { count, token } : undefined);
}

export function forgetSent(s: SessionState): void {
  setSentPrefix(s, undefined);
}
