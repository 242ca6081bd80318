import type { SessionState } from "../sessions/session-state.js";

/*
 * What inferproxy remembers of a session's last request: the token it gave
 * that request's messages array and how many messages the array held. The
 * next request of the same epoch sends only the messages after those
 * (CompleteRequest.after_messages_token), so a long conversation crosses the
 * gRPC hop once, not on every request. Kept in memory with the session's
 * `served` facts (a new epoch forgets it): after a restart of either daemon
 * the next request sends the whole array again.
 */

export interface RequestMessages {
  messagesJson: string;
  afterMessagesToken: string;
  /** How many messages the whole array holds: remembered with the token the final event brings. */
  count: number;
}

/** The messages of the next request: only the new ones when inferproxy holds the rest, else all. */
export function requestMessages(s: SessionState, whole = false): RequestMessages {
  const count = s.view.length;
  const p = s.served.sent;
  if (!whole && p && p.count <= count) {
    return { messagesJson: s.view.jsonAfter(p.count), afterMessagesToken: p.token, count };
  }
  return { messagesJson: s.view.json(), afterMessagesToken: "", count };
}

/** Notes the token inferproxy gave the array `requestMessages` built (empty: it kept nothing). */
export function noteSent(s: SessionState, count: number, token: string): void {
  s.served.sent = token ? { count, token } : undefined;
}

export function forgetSent(s: SessionState): void {
  s.served.sent = undefined;
}
