import { describe, expect, it } from "vitest";
import { lineCount } from "../src/tools/write-plan.js";

describe("line counts in write results", () => {
  it("counts lines as an editor does", () => {
    expect(lineCount("")).toBe(0);
    expect(lineCount("written\n")).toBe(1);
    expect(lineCount("a\nb")).toBe(2);
    expect(lineCount("a\nb\n")).toBe(2);
    expect(lineCount("\n")).toBe(1);
  });
});
