import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { TopK } from "../src/sessions/top-k.js";
import { byRecency, type Listed } from "../src/sessions/session-store.js";
import type { SessionSummary } from "../src/sessions/session-index.js";

const listed = (id: string, createdAt: number, updatedAt: number): Listed => ({
  summary: { id, createdAt, updatedAt } as SessionSummary,
});

/** What ListSessions did before: every session sorted oldest first, then by recency (stable), then cut. */
const sortAll = (items: Listed[], limit: number) =>
  [...items]
    .sort((a, b) => a.summary.createdAt - b.summary.createdAt)
    .sort((a, b) => b.summary.updatedAt - a.summary.updatedAt)
    .slice(0, limit);

describe("the most recent sessions, picked in one pass", () => {
  it("are the ones a full sort would show, in its order, with the same total", () => {
    fc.assert(
      fc.property(
        // Few distinct times, so ties on both fields are common.
        fc.array(fc.tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 6 })), { maxLength: 80 }),
        fc.integer({ min: 1, max: 60 }),
        (times, limit) => {
          const items = times.map(([c, u], i) => listed(`s${i}`, c, u));
          const pick = new TopK<Listed>(limit, byRecency);
          for (const it of items) pick.offer(it);
          expect(pick.top.map((x) => x.summary.id)).toEqual(sortAll(items, limit).map((x) => x.summary.id));
          expect(pick.total).toBe(items.length);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("keeps the newest 50 of 5,000 whatever order they come in", () => {
    const items = Array.from({ length: 5000 }, (_, i) => listed(`s${i}`, i, (i * 7919) % 5000));
    const pick = new TopK<Listed>(50, byRecency);
    for (const it of items) pick.offer(it);
    expect(pick.top.map((x) => x.summary.updatedAt)).toEqual(Array.from({ length: 50 }, (_, i) => 4999 - i));
    expect(pick.total).toBe(5000);
  });
});
