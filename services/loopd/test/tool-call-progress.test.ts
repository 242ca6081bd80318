import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { ToolCallDelta } from "@boxmaker/common";
import type { EventBody } from "../src/sessions/event-hub.js";
import { ToolCallProgress } from "../src/loop/tool-call-progress.js";

const EVERY = 250;

type Progress = { index: number; callId: string; name: string; argumentBytes: bigint };

/** Plays deltas at their times through the coalescer; returns what it announced, with the time of each. */
function play(deltas: { at: number; d: Omit<ToolCallDelta, "$typeName"> }[]) {
  let now = 0;
  const out: { at: number; p: Progress }[] = [];
  const progress = new ToolCallProgress(
    (e: EventBody) => {
      expect(e?.case).toBe("toolCallProgress");
      out.push({ at: now, p: e!.value as Progress });
    },
    () => now,
    EVERY,
  );
  for (const { at, d } of deltas) {
    now = at;
    progress.onDelta(d as ToolCallDelta);
  }
  return out;
}

/** One reply's tool calls as inferproxy forwards them: id and name on an index's first delta, then argument text. */
const callsArb = fc.array(
  fc.record({
    name: fc.constantFrom("write_file", "edit_file", "run_command", "update_plan"),
    chunks: fc.array(fc.record({ text: fc.string({ unit: "binary", maxLength: 12 }), gapMs: fc.nat(400) }), {
      maxLength: 60,
    }),
  }),
  { minLength: 1, maxLength: 3 },
);

describe("tool-call progress", () => {
  it("names each call at its first delta, then grows by at most one event per interval and never past what arrived", () => {
    fc.assert(
      fc.property(callsArb, (calls) => {
        let at = 0;
        const deltas: { at: number; d: Omit<ToolCallDelta, "$typeName"> }[] = [];
        const sent: { index: number; at: number; bytes: number }[][] = [];
        calls.forEach((c, index) => {
          const mine: { index: number; at: number; bytes: number }[] = [];
          deltas.push({ at, d: { index, id: `call-${index}`, type: "function", name: c.name, argumentsDelta: "" } });
          mine.push({ index, at, bytes: 0 });
          let bytes = 0;
          for (const ch of c.chunks) {
            at += ch.gapMs;
            bytes += Buffer.byteLength(ch.text);
            deltas.push({ at, d: { index, id: "", type: "", name: "", argumentsDelta: ch.text } });
            mine.push({ index, at, bytes });
          }
          sent.push(mine);
        });
        const out = play(deltas);
        calls.forEach((c, index) => {
          const mine = out.filter((o) => o.p.index === index);
          const arrived = sent[index]!;
          // At once: the first delta (name, nothing of the arguments yet) is announced when it arrives.
          expect(mine[0]).toEqual({
            at: arrived[0]!.at,
            p: { index, callId: `call-${index}`, name: c.name, argumentBytes: 0n },
          });
          for (let k = 1; k < mine.length; k++) {
            expect(mine[k]!.at - mine[k - 1]!.at).toBeGreaterThanOrEqual(EVERY);
            expect(mine[k]!.p.argumentBytes).toBeGreaterThan(mine[k - 1]!.p.argumentBytes);
          }
          for (const m of mine) {
            // Never more than had arrived by then.
            const had = arrived.filter((a) => a.at <= m.at).at(-1)!.bytes;
            expect(Number(m.p.argumentBytes)).toBeLessThanOrEqual(had);
            expect(m.p.name).toBe(c.name);
          }
          // Nothing that arrived an interval after the last announcement goes unannounced.
          const last = mine.at(-1)!;
          const missed = arrived.find((a) => a.at >= last.at + EVERY && a.bytes > Number(last.p.argumentBytes));
          expect(missed).toBeUndefined();
        });
      }),
      { numRuns: 500 },
    );
  });

  it("sends a few hundred events, not three thousand, for a 3,000-token file written at 30 tokens/s", () => {
    const deltas = [{ at: 0, d: { index: 0, id: "c", type: "function", name: "write_file", argumentsDelta: "" } }];
    for (let i = 1; i <= 3000; i++)
      deltas.push({
        at: Math.round(i * (1000 / 30)),
        d: { index: 0, id: "", type: "", name: "", argumentsDelta: "abcd" },
      });
    const out = play(deltas);
    expect(out.length).toBeLessThanOrEqual(1 + 100_000 / EVERY);
    expect(out.length).toBeGreaterThan(100_000 / EVERY / 2);
    expect(Number(out.at(-1)!.p.argumentBytes)).toBeGreaterThan(11_000);
  });

  it("waits for a name before announcing anything (a server that names a call late)", () => {
    const out = play([
      { at: 0, d: { index: 0, id: "c1", type: "function", name: "", argumentsDelta: '{"pa' } },
      { at: 1, d: { index: 0, id: "", type: "", name: "write_file", argumentsDelta: 'th"' } },
    ]);
    expect(out.map((o) => [o.p.name, o.p.argumentBytes])).toEqual([["write_file", 7n]]);
  });
});
