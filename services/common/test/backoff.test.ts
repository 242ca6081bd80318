import { describe, expect, it } from "vitest";
import { backoffDelay } from "@boxmaker/common";

describe("backoffDelay", () => {
  it("doubles from the initial delay and stops at the cap", () => {
    const p = { initialMs: 100, maxMs: 1000 };
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffDelay(p, n))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it("takes another factor, and stays finite for any attempt count", () => {
    expect(backoffDelay({ initialMs: 500, maxMs: 30_000, factor: 3 }, 2)).toBe(4500);
    expect(backoffDelay({ initialMs: 1, maxMs: 60_000 }, 10_000)).toBe(60_000);
    expect(backoffDelay({ initialMs: 100, maxMs: 1000 }, -3)).toBe(100);
  });
});
