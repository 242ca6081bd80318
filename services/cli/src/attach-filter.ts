import type { SessionEvent } from "@boxmaker/common/client";

/**
 * Follow replays the session's whole event backlog first. This drops the
 * replay of turns before `turn` so an attaching terminal starts at the turn
 * that is running now (or, waiting with --follow, at the next one).
 */
export async function* fromTurn(events: AsyncIterable<SessionEvent>, turn: number): AsyncGenerator<SessionEvent> {
  let started = false;
  for await (const ev of events) {
    if (!started && ev.event.case === "turnStarted" && ev.event.value.turn >= turn) started = true;
    if (started) yield ev;
  }
}

/** Turns a session has started: each turn begins by storing exactly one user message. */
export function turnsStarted(messagesJson: readonly string[]): number {
  let n = 0;
  for (const m of messagesJson) if (m.startsWith('{"role":"user"')) n++;
  return n;
}
