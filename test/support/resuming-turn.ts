import { ErrorReason, RpcError, Status, type SessionEvent } from "@boxmaker/common";
import type { LoopClient } from "./loop-client.js";

/**
 * A turn's events as a client that keeps up would see them: Send, and when
 * loopd ends it for falling behind (RESOURCE_EXHAUSTED with
 * resume_after_seq), Follow from there until the turn ends. A test process
 * that also plays the model can fall behind a burst; what the turn did is
 * the finding, not how fast the test read it.
 */
export async function resumingTurn(
  c: LoopClient,
  sessionId: string,
  text: string,
): Promise<{ events: SessionEvent[]; resumes: number }> {
  const events: SessionEvent[] = [];
  let resumes = 0;
  let stream: AsyncIterable<SessionEvent> = c.send({ sessionId, text });
  for (;;) {
    try {
      for await (const ev of stream) {
        if (events.length && ev.seq <= events.at(-1)!.seq) continue;
        events.push(ev);
        if (ev.event.case === "turnDone" || ev.event.case === "turnFailed") return { events, resumes };
      }
      return { events, resumes };
    } catch (err) {
      const behind =
        err instanceof RpcError &&
        err.status === Status.RESOURCE_EXHAUSTED &&
        err.details.reason === ErrorReason.FELL_BEHIND;
      if (!behind) throw err;
      resumes++;
      stream = c.follow({ sessionId, afterSeq: err.details.resumeAfterSeq });
    }
  }
}
