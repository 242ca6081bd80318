import type { SessionEvent } from "@boxmaker/common/client";

/**
 * Where an attaching terminal starts following: the running turn's
 * turn_started event, or (waiting with --follow) whatever comes next.
 */
export function followFrom(info: { state: string; turnStartedSeq: bigint; lastEventSeq: bigint }): bigint {
  if (info.state === "running" && info.turnStartedSeq > 0n) return info.turnStartedSeq - 1n;
  return info.lastEventSeq;
}

/** Skips anything before the first turn_started, so output always begins at a turn's start. */
export async function* fromTurnStart(events: AsyncIterable<SessionEvent>): AsyncGenerator<SessionEvent> {
  let started = false;
  for await (const ev of events) {
    if (!started && ev.event.case === "turnStarted") started = true;
    if (started) yield ev;
  }
}
