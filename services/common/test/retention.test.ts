import { describe, expect, it } from "vitest";
import { DAY_MS, pastRetention } from "@boxmaker/common";

const now = 1_000 * DAY_MS;
const aged = (days: number[]) => days.map((d, i) => ({ id: i, at: now - d * DAY_MS }));

describe("pastRetention: older than keepDays or beyond the newest keepMax", () => {
  it("by age: only what is older than the days goes; 0 keeps any age", () => {
    const e = aged([1, 29, 31, 400]);
    expect(pastRetention(e, (x) => x.at, { keepDays: 30, keepMax: 0 }, now).map((x) => x.id)).toEqual([2, 3]);
    expect(pastRetention(e, (x) => x.at, { keepDays: 0, keepMax: 0 }, now)).toEqual([]);
  });

  it("by count: the newest keepMax stay whatever the input order", () => {
    const e = aged([5, 1, 9, 3, 7]);
    expect(pastRetention(e, (x) => x.at, { keepDays: 0, keepMax: 2 }, now).map((x) => x.id)).toEqual([0, 4, 2]);
  });

  it("both: whichever lets more go", () => {
    const e = aged([1, 2, 3, 50]);
    expect(pastRetention(e, (x) => x.at, { keepDays: 30, keepMax: 2 }, now).map((x) => x.id)).toEqual([2, 3]);
  });
});
