import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CacheHealth, POOR_STREAK, type ResponseFacts } from "../src/slots/cache-health.js";

/**
 * A slot simulated by its token count: each request's prompt is what the slot
 * held plus `fresh` new tokens, of which the server re-reads `lost` more than
 * the new ones (what a moved template block or a lost cache costs).
 */
function conversation(
  h: CacheHealth,
  steps: Array<{ fresh: number; lost: number; predicted: number }>,
  over: Partial<ResponseFacts> = {},
) {
  let held = 0;
  const warnings = [];
  for (const s of steps) {
    const prompt = held + s.fresh;
    const promptN = Math.min(prompt, s.fresh + s.lost);
    const w = h.record({
      sessionId: "s-a",
      slot: 0,
      epoch: 0,
      cacheN: prompt - promptN,
      promptN,
      predictedN: s.predicted,
      templateWarning: "",
      ...over,
    });
    if (w) warnings.push(w);
    held = prompt + s.predicted - 1;
  }
  return warnings;
}

const step = fc.record({
  fresh: fc.integer({ min: 1, max: 400 }),
  lost: fc.constant(0),
  predicted: fc.integer({ min: 1, max: 200 }),
});

describe("cache health", () => {
  it("exact reuse measures 1.000 and never warns, whatever the sizes (300 generated sessions)", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 2, maxLength: 30 }), (steps) => {
        const h = new CacheHealth();
        expect(conversation(h, steps)).toEqual([]);
        const f = h.ofSession("s-a");
        expect(f.requests).toBe(steps.length - 1);
        expect(f.ratio).toBe(1);
        expect(Number(f.newTokens)).toBe(steps.slice(1).reduce((n, s) => n + s.fresh, 0));
      }),
      { numRuns: 300 },
    );
  });

  it("a re-read of at least 32 tokens above 1.5× on three requests in a row warns exactly once (300 generated sessions)", () => {
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 5 }),
        fc.array(
          fc.record({
            fresh: fc.integer({ min: 1, max: 100 }),
            lost: fc.integer({ min: 200, max: 2000 }),
            predicted: fc.integer({ min: 1, max: 50 }),
          }),
          { minLength: POOR_STREAK, maxLength: 12 },
        ),
        (good, bad) => {
          const h = new CacheHealth();
          const warnings = conversation(h, [{ fresh: 3000, lost: 0, predicted: 5 }, ...good, ...bad]);
          expect(warnings).toHaveLength(1);
          expect(warnings[0]!.cause).toBe("history");
          expect(warnings[0]!.message).toContain(`the last ${POOR_STREAK} requests read`);
          expect(h.ofSession("s-a").warning).toBe(warnings[0]!.message);
          expect(h.ofSession("s-a").ratio).toBeGreaterThan(1);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("two poor requests then a good one start the count again", () => {
    const h = new CacheHealth();
    const bad = { fresh: 20, lost: 500, predicted: 3 };
    const good = { fresh: 20, lost: 0, predicted: 3 };
    expect(conversation(h, [{ fresh: 1000, lost: 0, predicted: 3 }, bad, bad, good, bad, bad])).toEqual([]);
    expect(h.ofSession("s-a").poorStreak).toBe(2);
  });

  it("names the template when inferproxy's probe said so, a cold cache as a restart, and another session on the slot", () => {
    const bad = { fresh: 20, lost: 5000, predicted: 3 };
    const base = { fresh: 1000, lost: 0, predicted: 3 };
    const t = conversation(new CacheHealth(), [base, bad, bad, bad], { templateWarning: "the tools block moves" });
    expect(t[0]).toMatchObject({ cause: "template" });
    expect(t[0]!.message).toContain("the tools block moves");
    // lost ≥ the whole prompt: cache_n is 0.
    const r = conversation(new CacheHealth(), [base, bad, bad, bad]);
    expect(r[0]).toMatchObject({ cause: "server_restarted" });

    const h = new CacheHealth();
    const facts = (sessionId: string, cacheN: number, promptN: number): ResponseFacts => ({
      sessionId,
      slot: 1,
      epoch: 0,
      cacheN,
      promptN,
      predictedN: 1,
      templateWarning: "",
    });
    h.record(facts("s-a", 0, 1000));
    const seen = [];
    for (let i = 1; i <= 3; i++) {
      h.record(facts("s-b", 0, 10)); // another session runs on slot 1 in between
      seen.push(h.record(facts("s-a", 5, 1000 + 10 * i - 5)));
    }
    expect(seen.filter(Boolean)).toMatchObject([{ cause: "slot_taken" }]);
    expect(h.ofServer().requests).toBeGreaterThan(0);
  });

  it("a new epoch or a shrunk prompt is not measured", () => {
    const h = new CacheHealth();
    const f = (epoch: number, cacheN: number, promptN: number): ResponseFacts => ({
      sessionId: "s-a",
      slot: 0,
      epoch,
      cacheN,
      promptN,
      predictedN: 2,
      templateWarning: "",
    });
    h.record(f(0, 0, 500));
    h.record(f(1, 0, 200)); // compacted: a new, shorter prompt
    h.record(f(1, 100, 50)); // shorter than what was held
    expect(h.ofSession("s-a").requests).toBe(0);
  });
});
