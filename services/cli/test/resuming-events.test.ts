import { afterEach, describe, expect, it, vi } from "vitest";
import fc from "fast-check";
import { create } from "@bufbuild/protobuf";
import { ErrorReason, RpcError, SessionEventSchema, Status, type SessionEvent } from "@boxmaker/common/client";
import { resumingEvents } from "../src/turn-stream.js";

/**
 * loopd ends a stream whose reader fell behind with RESOURCE_EXHAUSTED and
 * the seq to resume after, and a Follow from there replays what it still
 * holds (its backlog may overlap what the client already has, or have lost
 * the start). Played against a model of that: a session of `n` events, the
 * stream cut at generated points, each resume answered from a backlog whose
 * start is generated too.
 */
const ev = (seq: number): SessionEvent =>
  create(SessionEventSchema, {
    sessionId: "s",
    seq: BigInt(seq),
    event: { case: "content", value: { text: `e${seq}` } },
  });

const behind = (after: number) =>
  new RpcError(Status.RESOURCE_EXHAUSTED, "fell behind", {
    reason: ErrorReason.FELL_BEHIND,
    resumeAfterSeq: BigInt(after),
  });

/** Events (after, upTo], then the overflow error when `cut` (else the stream just ends at upTo). */
async function* stream(from: number, upTo: number, cut: boolean): AsyncGenerator<SessionEvent> {
  for (let s = from + 1; s <= upTo; s++) yield ev(s);
  if (cut) throw behind(upTo);
}

afterEach(() => vi.restoreAllMocks());

describe("resumingEvents", () => {
  it("passes every event on once, in order, across generated cuts and overlapping replays; says nothing", async () => {
    const err = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 300 }),
        fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 0, max: 40 })), {
          maxLength: 8,
        }),
        async (n, cutsRaw) => {
          // Ascending cut points; each resume's backlog reaches back `overlap` events before the cut.
          const cuts = [...new Set(cutsRaw.map(([f]) => Math.floor(f * n)))].sort((a, b) => a - b);
          const overlaps = cutsRaw.map(([, o]) => o);
          let i = 0;
          const followFrom = (after: bigint) => {
            const a = Number(after);
            const next = cuts[++i];
            const replayFrom = Math.max(0, a - (overlaps[i] ?? 0));
            return stream(replayFrom, next ?? n, next !== undefined);
          };
          const first = stream(0, cuts[0] ?? n, cuts.length > 0);
          const got: number[] = [];
          for await (const e of resumingEvents(first, followFrom)) got.push(Number(e.seq));
          expect(got).toEqual(Array.from({ length: n }, (_, k) => k + 1));
        },
      ),
      { numRuns: 300 },
    );
    expect(err).not.toHaveBeenCalled();
  });

  it("names a gap loopd can no longer fill, once, and goes on", async () => {
    const lines: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((s) => {
      lines.push(String(s));
      return true;
    });
    // Cut after 10; loopd's backlog now starts at 25.
    const got: number[] = [];
    for await (const e of resumingEvents(stream(0, 10, true), () => stream(24, 40, false))) got.push(Number(e.seq));
    expect(got).toEqual([
      ...Array.from({ length: 10 }, (_, k) => k + 1),
      ...Array.from({ length: 16 }, (_, k) => k + 25),
    ]);
    expect(lines.join("")).toMatch(/events 11–24 of session s are no longer held by loopd/);
  });

  it("gives up when resuming brings nothing, and passes other errors through at once", async () => {
    vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    let follows = 0;
    const barren = resumingEvents(stream(0, 3, true), (after) => {
      follows++;
      return stream(Number(after), Number(after), true);
    });
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const e of barren) seen.push(Number(e.seq));
      })(),
    ).rejects.toMatchObject({ status: Status.RESOURCE_EXHAUSTED });
    expect(seen).toEqual([1, 2, 3]);
    expect(follows).toBe(4);

    async function* lost(): AsyncGenerator<SessionEvent> {
      yield ev(1);
      throw new RpcError(Status.UNAVAILABLE, "loopd went away");
    }
    let called = false;
    await expect(
      (async () => {
        for await (const _ of resumingEvents(lost(), () => {
          called = true;
          return stream(0, 0, false);
        }));
      })(),
    ).rejects.toMatchObject({ status: Status.UNAVAILABLE });
    expect(called).toBe(false);
  });
});
