import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { Slots } from "../../src/tools/slots.js";

describe("Slots (grep_blob's concurrency bound)", () => {
  it("never runs more than its size, queues at most maxWaiting, refuses the rest, and lets an aborted waiter go", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 0, max: 4 }),
        fc.array(fc.record({ hold: fc.integer({ min: 0, max: 3 }), abort: fc.boolean() }), { maxLength: 20 }),
        async (size, maxWaiting, jobs) => {
          const slots = new Slots(size, maxWaiting);
          let running = 0;
          let peak = 0;
          let refused = 0;
          let aborted = 0;
          let ran = 0;
          await Promise.all(
            jobs.map(async ({ hold, abort }) => {
              const ac = new AbortController();
              if (abort) setTimeout(() => ac.abort(new Error("gone")), 0);
              let release: (() => void) | undefined;
              try {
                release = await slots.acquire(ac.signal);
              } catch {
                aborted++;
                return;
              }
              if (!release) return void refused++;
              running++;
              peak = Math.max(peak, running);
              for (let i = 0; i < hold; i++) await new Promise((r) => setImmediate(r));
              running--;
              ran++;
              release();
              release(); // a second call must not free a second slot
            }),
          );
          expect(peak).toBeLessThanOrEqual(size);
          expect(ran + refused + aborted).toBe(jobs.length);
          expect(refused).toBeLessThanOrEqual(Math.max(0, jobs.length - size - maxWaiting));
          expect(slots.running).toBe(0);
          expect(slots.waiting).toBe(0);
        },
      ),
      { numRuns: 300 },
    );
  });
});
