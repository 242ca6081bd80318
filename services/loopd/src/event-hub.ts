import { AsyncQueue } from "@boxmaker/common";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SessionEventSchema } from "@boxmaker/common";

export type SessionEventInit = MessageInitShape<typeof SessionEventSchema>;
/** An event as the loop produces it; the hub stamps session id and sequence number. */
export type EventBody = SessionEventInit["event"];

const TURN_END_CASES = new Set(["turnDone", "turnFailed"]);

/**
 * Fans one session's events out to every client following it. A bounded
 * backlog lets a client that attaches mid-turn (or reconnects) catch up from
 * the sequence number it last saw. The backlog holds the latest turn only:
 * loopd runs for weeks with many sessions, and earlier turns are in the log.
 */
export class EventHub {
  private seq = 0;
  private readonly backlog: SessionEventInit[] = [];
  private readonly listeners = new Set<(ev: SessionEventInit) => void>();

  constructor(
    readonly sessionId: string,
    private readonly backlogSize = 10_000,
    /** Where numbering resumes for a session read back into memory (clients keep the seq they saw). */
    firstSeq = 0,
  ) {
    this.seq = firstSeq;
  }

  get lastSeq(): number {
    return this.seq;
  }

  /** Whether a client is following the session now. */
  get listening(): boolean {
    return this.listeners.size > 0;
  }

  publish(body: EventBody): SessionEventInit {
    const ev: SessionEventInit = { sessionId: this.sessionId, seq: BigInt(++this.seq), event: body };
    if (body?.case === "turnStarted") this.backlog.length = 0;
    this.backlog.push(ev);
    if (this.backlog.length > this.backlogSize) this.backlog.splice(0, this.backlog.length - this.backlogSize);
    for (const l of this.listeners) l(ev);
    return ev;
  }

  /**
   * Events after `afterSeq`, then live ones. With `untilTurnEnd` the stream
   * ends after the first turn_done or turn_failed it yields.
   */
  async *subscribe(afterSeq: number, signal: AbortSignal, untilTurnEnd = false): AsyncGenerator<SessionEventInit> {
    const queue = new AsyncQueue<SessionEventInit>();
    for (const e of this.backlog) if (Number(e.seq) > afterSeq) queue.push(e);
    const listener = (ev: SessionEventInit) => queue.push(ev);
    this.listeners.add(listener);
    // What was published before the abort is still delivered; then the stream ends.
    const onAbort = () => queue.close();
    if (signal.aborted) onAbort();
    signal.addEventListener("abort", onAbort);
    try {
      for await (const ev of queue) {
        yield ev;
        if (untilTurnEnd && ev.event?.case && TURN_END_CASES.has(ev.event.case)) return;
      }
    } finally {
      this.listeners.delete(listener);
      signal.removeEventListener("abort", onAbort);
    }
  }
}
