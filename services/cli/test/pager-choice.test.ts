import { describe, expect, it } from "vitest";
import { pagerFor, tallerThan } from "../src/pager-choice.js";

describe("which pager", () => {
  it("is BOXMAKER_PAGER, then PAGER, then less; LESS=FRX for less unless the person set LESS", () => {
    expect(pagerFor({ BOXMAKER_PAGER: "most", PAGER: "more" }, undefined)?.command).toBe("most");
    expect(pagerFor({ PAGER: "more" }, undefined)).toEqual({ command: "more", env: { PAGER: "more" } });
    expect(pagerFor({}, undefined)).toEqual({ command: "less", env: { LESS: "FRX" } });
    expect(pagerFor({ PAGER: "/usr/bin/less -S" }, undefined)?.env.LESS).toBe("FRX");
    expect(pagerFor({ LESS: "-i" }, undefined)?.env.LESS).toBe("-i");
    expect(pagerFor({ LESS: "" }, undefined)?.env.LESS).toBe("");
  });

  it("is none with --no-pager, or when it is set to nothing or to cat", () => {
    expect(pagerFor({}, false)).toBeUndefined();
    expect(pagerFor({ BOXMAKER_PAGER: "", PAGER: "less" }, undefined)).toBeUndefined();
    expect(pagerFor({ PAGER: " " }, undefined)).toBeUndefined();
    for (const cat of ["cat", "/bin/cat", "cat -"]) expect(pagerFor({ PAGER: cat }, undefined), cat).toBeUndefined();
    expect(pagerFor({ PAGER: "catdoc" }, undefined)?.command).toBe("catdoc");
  });
});

describe("whether text is taller than the terminal", () => {
  it("counts its lines, a row left for the prompt after it", () => {
    expect(tallerThan("a\nb\nc\n", 4, 80)).toBe(false);
    expect(tallerThan("a\nb\nc\nd\n", 4, 80)).toBe(true);
    expect(tallerThan("a\nb\nc", 4, 80)).toBe(false);
  });

  it("counts the rows a line wider than the terminal wraps onto, in columns (a wide character takes two)", () => {
    expect(tallerThan(`${"x".repeat(30)}\n`, 3, 10)).toBe(true);
    expect(tallerThan(`${"x".repeat(20)}\n`, 3, 10)).toBe(false);
    expect(tallerThan(`${"字".repeat(15)}\n`, 3, 10)).toBe(true);
    expect(tallerThan(`${"x".repeat(15)}\n`, 3, 10)).toBe(false);
  });
});
