import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { JsonArrayCheck } from "../src/completion/json-array-check.js";

const msg = (i: number) =>
  JSON.stringify({ role: i % 2 ? "assistant" : "user", content: `message ${i} "quoted" \\ ]` });
const arr = (n: number) => `[${Array.from({ length: n }, (_, i) => msg(i)).join(",")}]`;

describe("JsonArrayCheck", () => {
  it("accepts a conversation and each extension of it, parsing only what is new", () => {
    const check = new JsonArrayCheck();
    check.require(arr(3), "messages_json", false);
    const parse = JSON.parse;
    const parsed: number[] = [];
    JSON.parse = ((t: string, r?: never) => {
      parsed.push(t.length);
      return parse(t, r);
    }) as typeof JSON.parse;
    try {
      check.require(arr(5), "messages_json", false);
      check.require(arr(6), "messages_json", false);
    } finally {
      JSON.parse = parse;
    }
    // Only the appended messages were parsed, never the whole conversation again.
    expect(parsed).toEqual([msg(3).length + msg(4).length + 3, msg(5).length + 2]);
  });

  it("refuses what is not a JSON array, including a broken extension of a checked one", () => {
    const check = new JsonArrayCheck();
    const base = arr(2);
    check.require(base, "messages_json", false);
    const bad = [
      `${base.slice(0, -1)},{"role":]`,
      `${base.slice(0, -1)},]`,
      `${base.slice(0, -1)},{}`,
      "[{",
      '{"role":"user"}',
      "[]",
    ];
    for (const b of bad) expect(() => check.require(b, "messages_json", false), b).toThrow(/messages_json/);
  });

  it("agrees with JSON.parse on generated extensions of a checked array", () => {
    fc.assert(
      fc.property(
        fc.array(fc.jsonValue(), { minLength: 1, maxLength: 4 }),
        fc.string({ maxLength: 12 }),
        (vals, junk) => {
          const check = new JsonArrayCheck();
          const base = JSON.stringify(vals.slice(0, 1));
          check.require(base, "m", false);
          const candidate = `${base.slice(0, -1)},${junk}]`;
          let valid = true;
          try {
            valid = Array.isArray(JSON.parse(candidate));
          } catch {
            valid = false;
          }
          if (valid) expect(() => check.require(candidate, "m", false)).not.toThrow();
          else expect(() => check.require(candidate, "m", false)).toThrow();
        },
      ),
      { numRuns: 2000 },
    );
  });
});
