import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { RpcError, Status } from "@boxmaker/common";
import { EventHub } from "../src/sessions/event-hub.js";

/** What a subscriber attaching after `afterSeq` is sent, up to the last event published. */
async function collect(hub: EventHub, afterSeq: number): Promise<string[]> {
  const out: string[] = [];
  if (afterSeq >= hub.lastSeq) return out;
  for await (const ev of hub.subscribe(afterSeq, new AbortController().signal)) {
    out.push(`${ev.seq}:${ev.event?.case}`);
    if (Number(ev.seq) >= hub.lastSeq) break;
  }
  return out;
}

describe("event hub", () => {
  it("replays the latest turn to a late subscriber, not every turn before it", async () => {
    const hub = new EventHub("s", 100);
    hub.publish({ case: "turnStarted", value: { turn: 1, slot: 0 } });
    hub.publish({ case: "content", value: { text: "a" } });
    hub.publish({ case: "turnStarted", value: { turn: 2, slot: 0 } });
    hub.publish({ case: "content", value: { text: "b" } });
    expect(await collect(hub, 0)).toEqual(["3:turnStarted", "4:content"]);
    expect(await collect(hub, 3)).toEqual(["4:content"]);
  });

  it("caps the backlog of one long turn", async () => {
    const hub = new EventHub("s", 3);
    hub.publish({ case: "turnStarted", value: { turn: 1, slot: 0 } });
    for (const t of ["a", "b", "c", "d"]) hub.publish({ case: "content", value: { text: t } });
    expect(await collect(hub, 0)).toEqual(["3:content", "4:content", "5:content"]);
  });
});

describe("a subscriber until the turn's end", () => {
  it("gets live events and stops after turn_done", async () => {
    const hub = new EventHub("s");
    hub.publish({ case: "turnStarted", value: { turn: 1, slot: 0 } });
    const seen: string[] = [];
    const done = (async () => {
      for await (const ev of hub.subscribe(0, new AbortController().signal, true)) seen.push(ev.event?.case ?? "");
    })();
    hub.publish({ case: "content", value: { text: "a" } });
    hub.publish({ case: "turnDone", value: { finishReason: "stop" } });
    hub.publish({ case: "content", value: { text: "next turn" } });
    await done;
    expect(seen).toEqual(["turnStarted", "content", "turnDone"]);
  });
});

describe("a subscriber that stops reading", () => {
  /** Starts a subscription, reads its first event, and then reads nothing until asked to drain. */
  async function stalled(hub: EventHub, afterSeq: number) {
    const it = hub.subscribe(afterSeq, new AbortController().signal)[Symbol.asyncIterator]();
    const first = await it.next();
    return {
      first: Number(first.value?.seq),
      /** Reads on, up to the last event published or the stream's end. */
      async drain(): Promise<{ seqs: number[]; error: unknown }> {
        const seqs: number[] = [];
        let last = Number(first.value?.seq);
        try {
          while (last < hub.lastSeq) {
            const r = await it.next();
            if (r.done) break;
            last = Number(r.value.seq);
            seqs.push(last);
          }
          await it.return(undefined);
        } catch (err) {
          return { seqs, error: err };
        }
        return { seqs, error: undefined };
      },
    };
  }

  it("is ended with RESOURCE_EXHAUSTED once it falls behind, holding at most the bound, and resumes from the seq named", async () => {
    const hub = new EventHub("s", 10_000, 0, { events: 100, bytes: 1 << 30 });
    hub.publish({ case: "turnStarted", value: { turn: 1, slot: 0 } });
    const sub = await stalled(hub, 0);
    expect(sub.first).toBe(1);
    // The attacker's figure: 64,328 events published while the client reads nothing.
    for (let i = 0; i < 64_328; i++) hub.publish({ case: "content", value: { text: `t${i}` } });
    expect(hub.listening).toBe(false);
    const { seqs, error } = await sub.drain();
    expect(seqs.length).toBeLessThanOrEqual(100);
    expect(error).toBeInstanceOf(RpcError);
    const e = error as RpcError;
    expect(e.status).toBe(Status.RESOURCE_EXHAUSTED);
    const resume = Number(e.details.resumeAfterSeq);
    expect(resume).toBe(seqs.at(-1));
    expect(e.message).toMatch(new RegExp(`fell behind .* follow again with after_seq ${resume} to resume`));
  });

  it("loses nothing across ends and resumes while the turn's events are held (generated read patterns)", async () => {
    let ends = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 40 }),
        fc.array(fc.integer({ min: 0, max: 120 }), { minLength: 1, maxLength: 8 }),
        fc.array(fc.string({ maxLength: 300 }), { minLength: 1, maxLength: 5 }),
        async (bound, bursts, texts) => {
          const hub = new EventHub("s", 10_000, 0, { events: bound, bytes: 4096 });
          hub.publish({ case: "turnStarted", value: { turn: 1, slot: 0 } });
          const got: number[] = [];
          for (const burst of bursts) {
            // Resume after the last event this client got (an ended stream named that same seq).
            const sub = await stalled(hub, got.at(-1) ?? 0);
            got.push(sub.first);
            for (let i = 0; i < burst; i++) hub.publish({ case: "content", value: { text: texts[i % texts.length]! } });
            const { seqs, error } = await sub.drain();
            got.push(...seqs);
            if (error) {
              ends++;
              expect((error as RpcError).status).toBe(Status.RESOURCE_EXHAUSTED);
              expect(Number((error as RpcError).details.resumeAfterSeq)).toBe(got.at(-1));
            }
            // Something new for the next subscription's first read.
            hub.publish({ case: "content", value: { text: "next" } });
          }
          got.push(...(await collect(hub, got.at(-1)!)).map((x) => Number(x.split(":")[0])));
          // Every event published, once each and in order, however many times the stream was ended.
          expect(got).toEqual(Array.from({ length: hub.lastSeq }, (_, i) => i + 1));
        },
      ),
      { numRuns: 200 },
    );
    expect(ends).toBeGreaterThan(0);
  });

  it("replaying a long turn's backlog to a new subscriber is not falling behind", async () => {
    const hub = new EventHub("s", 10_000, 0, { events: 10, bytes: 1 << 30 });
    hub.publish({ case: "turnStarted", value: { turn: 1, slot: 0 } });
    for (let i = 0; i < 500; i++) hub.publish({ case: "content", value: { text: "x" } });
    expect(await collect(hub, 0)).toHaveLength(501);
  });
});
