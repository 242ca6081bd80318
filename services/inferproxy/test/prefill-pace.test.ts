import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { DEFAULT_BATCH_TOKENS, PrefillPace, paceLimits } from "../src/completion/prefill-pace.js";

/** What a batch costs under a linear per-token model t(d) = α + β·d: the sum over its tokens. */
const batchCost = (alpha: number, beta: number, from: number, tokens: number) =>
  tokens * alpha + beta * (tokens * from + (tokens * (tokens - 1)) / 2);

/** A server whose tokens cost α + β·depth ms, read in batches of `batch` tokens from depth `start`. */
const server = fc.record({
  alpha: fc.double({ min: 0.001, max: 20, noNaN: true }),
  beta: fc.double({ min: 0, max: 0.01, noNaN: true }),
  batch: fc.constantFrom(512, 1024, 2048, 4096, 8192),
  start: fc.integer({ min: 0, max: 60_000 }),
  batches: fc.integer({ min: 1, max: 12 }),
  ahead: fc.integer({ min: 0, max: 100_000 }),
});

describe("PrefillPace: the window for a prefill batch follows the server's measured pace", () => {
  it("never predicts less than a batch takes, deeper than anything observed, under any linear cost (2,000 servers)", () => {
    fc.assert(
      fc.property(server, ({ alpha, beta, batch, start, batches, ahead }) => {
        const pace = new PrefillPace();
        let d = start;
        for (let i = 0; i < batches; i++, d += batch)
          pace.observe(d, d + batch, batchCost(alpha, beta, d, batch), true);
        // Any batch later in the prompt, as deep as a 128k slot allows.
        const from = d + ahead;
        const predicted = pace.predictMs(from, batch)!;
        const actual = batchCost(alpha, beta, from, batch);
        // Equal when α is 0: the bound is exact there, up to rounding.
        expect(predicted).toBeGreaterThanOrEqual(actual * (1 - 1e-6));
        // And the margin puts the window above it, up to the ceiling.
        const limits = paceLimits(5000);
        const w = pace.windowFor(from, from + 10 * batch, limits);
        expect(w.batchTokens).toBe(batch);
        expect(w.windowMs).toBeGreaterThanOrEqual(Math.min(limits.ceilingMs, Math.floor(actual)));
        expect(w.windowMs).toBeGreaterThanOrEqual(limits.floorMs);
        expect(w.windowMs).toBeLessThanOrEqual(limits.ceilingMs);
      }),
      { numRuns: 2000 },
    );
  });

  it("stays within a small factor of the truth when it has seen the depth before (the bound is not loose)", () => {
    fc.assert(
      fc.property(server, ({ alpha, beta, batch, start, batches }) => {
        const pace = new PrefillPace();
        let d = start;
        for (let i = 0; i < batches; i++, d += batch)
          pace.observe(d, d + batch, batchCost(alpha, beta, d, batch), true);
        const predicted = pace.predictMs(d, batch)!;
        const actual = batchCost(alpha, beta, d, batch);
        // The next batch: at most as much worse as it is deeper than the oldest of the 4 observations kept.
        const oldestMid = d - Math.min(batches, 4) * batch + (batch - 1) / 2;
        const mid = d + (batch - 1) / 2;
        expect(predicted / actual).toBeLessThanOrEqual(mid / oldestMid + 1e-9);
      }),
      { numRuns: 500 },
    );
  });

  it("before anything was observed, a batch gets the ceiling: a slow batch cannot be told from a hung server yet", () => {
    const pace = new PrefillPace();
    const limits = paceLimits(5000);
    expect(pace.windowFor(0, 100_000, limits)).toMatchObject({
      windowMs: limits.ceilingMs,
      predictedMs: undefined,
      batchTokens: DEFAULT_BATCH_TOKENS,
    });
    expect(limits.ceilingMs).toBe(200_000);
  });

  it("learns the batch size from the steps between progress events; a short last batch does not shrink it", () => {
    const pace = new PrefillPace();
    pace.observe(0, 8192, 8000, true);
    pace.observe(8192, 9000, 900, true);
    expect(pace.batchTokens).toBe(8192);
    // The rest of the prompt is what the next batch can hold, not more.
    expect(pace.windowFor(9000, 9100, paceLimits(10)).batchTokens).toBe(100);
  });

  it("ignores spans too small to be reading (fixed per-request cost), and nonsense", () => {
    const pace = new PrefillPace();
    pace.observe(0, 30, 227);
    pace.observe(10, 5, 100);
    pace.observe(0, 4096, 0);
    pace.observe(0, 4096, Number.NaN);
    expect(pace.observations).toBe(0);
    expect(pace.predictMs(0, 2048)).toBeUndefined();
  });

  it("the window never drops below the configured one, however fast the server reads", () => {
    const pace = new PrefillPace();
    pace.observe(0, 2048, 20, true);
    expect(pace.windowFor(2048, 10_000, paceLimits(5000)).windowMs).toBe(5000);
  });

  it("a batch another slot is reading sets the window of every run (the server decodes all slots in one batch)", () => {
    const pace = new PrefillPace();
    const a = {};
    const b = {};
    expect(pace.readingWindowMs).toBe(0);
    pace.setReading(a, 12_000);
    pace.setReading(b, 30_000);
    expect(pace.readingWindowMs).toBe(30_000);
    pace.setReading(b, undefined);
    expect(pace.readingWindowMs).toBe(12_000);
    pace.setReading(a, undefined);
    expect(pace.readingWindowMs).toBe(0);
  });
});
