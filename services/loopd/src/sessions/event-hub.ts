import { AsyncQueue, ErrorReason, resourceExhausted } from "@boxmaker/common";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SessionEventSchema } from "@boxmaker/common";

export type SessionEventInit = MessageInitShape<typeof SessionEventSchema>;
/** An event as the loop produces it; the hub stamps session id and sequence number. */
export type EventBody = SessionEventInit["event"];

const TURN_END_CASES = new Set(["turnDone", "turnFailed"]);

/**
 * How far one subscriber may fall behind before it is ended. Each subscriber
 * has its own queue, filled at the loop's pace and drained at its client's
 * (gRPC backpressure): a client that stops reading would otherwise hold every
 * event of a long session in loopd's memory. 4,096 events is a long turn's
 * worth of streamed deltas; 16 MiB bounds a few large tool results. Below the
 * backlog's 10,000, so a subscriber ended here can resume from the seq it
 * last got while the turn's events are still held.
 */
const MAX_BEHIND = { events: 4_096, bytes: 16 * 1024 * 1024 };

const mib = (bytes: number) => (bytes >= 1 << 20 ? `${Math.round(bytes / (1 << 20))} MiB` : `${bytes} bytes`);

/** Roughly what an event weighs in memory: its strings (deltas, tool arguments and results) dominate. */
function approxBytes(ev: SessionEventInit): number {
  let n = 64;
  const v = ev.event?.value as Record<string, unknown> | undefined;
  if (v) for (const x of Object.values(v)) if (typeof x === "string") n += x.length * 2;
  return n;
}

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
    private readonly maxBehind: { events: number; bytes: number } = MAX_BEHIND,
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
   * ends after the first turn_done or turn_failed it yields. A subscriber
   * that falls more than `maxBehind` behind gets what was queued for it, then
   * a RESOURCE_EXHAUSTED error naming the seq to resume from (subscribe again
   * with it as `afterSeq`); nothing published after the overflow is queued.
   */
  async *subscribe(afterSeq: number, signal: AbortSignal, untilTurnEnd = false): AsyncGenerator<SessionEventInit> {
    const queue = new AsyncQueue<SessionEventInit>();
    let behind = 0;
    let behindBytes = 0;
    let overflowed = false;
    const enqueue = (ev: SessionEventInit) => {
      if (overflowed) return;
      const bytes = approxBytes(ev);
      if (behind + 1 > this.maxBehind.events || (behind > 0 && behindBytes + bytes > this.maxBehind.bytes)) {
        overflowed = true;
        this.listeners.delete(enqueue);
        queue.close();
        return;
      }
      behind++;
      behindBytes += bytes;
      queue.push(ev);
    };
    // The backlog's events are held anyway (and bounded by backlogSize), so
    // replaying them counts against no bound: only live events are "behind".
    const replayedTo = this.seq;
    for (const e of this.backlog) if (Number(e.seq) > afterSeq) queue.push(e);
    this.listeners.add(enqueue);
    // What was published before the abort is still delivered; then the stream ends.
    const onAbort = () => queue.close();
    if (signal.aborted) onAbort();
    signal.addEventListener("abort", onAbort);
    let lastSent = afterSeq;
    try {
      for await (const ev of queue) {
        if (Number(ev.seq) > replayedTo) {
          behind--;
          behindBytes -= approxBytes(ev);
        }
        lastSent = Number(ev.seq);
        yield ev;
        if (untilTurnEnd && ev.event?.case && TURN_END_CASES.has(ev.event.case)) return;
      }
      if (overflowed && !signal.aborted) {
        throw resourceExhausted(
          `this subscriber fell behind session ${this.sessionId} by more than ${this.maxBehind.events} events ` +
            `or ${mib(this.maxBehind.bytes)} and was ended; follow again with after_seq ${lastSent} to resume`,
          { reason: ErrorReason.FELL_BEHIND, resumeAfterSeq: BigInt(lastSent) },
        );
      }
    } finally {
      this.listeners.delete(enqueue);
      signal.removeEventListener("abort", onAbort);
    }
  }
}
