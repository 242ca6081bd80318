import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ToolIndex, ToolSearch } from "../../src/find-tool.js";
import { ToolTable, type ToolDef } from "../../src/tool-table.js";
import { checkArguments } from "../../src/validate.js";

const tool = (name: string, parameters: Record<string, unknown>, description = `the ${name} tool`): ToolDef => ({
  name,
  description,
  parameters,
  risk: "read",
  core: false,
  kind: "mcp",
  origin: "test",
  plan: () => {
    throw new Error("not run");
  },
});

function deepSchema(levels: number): Record<string, unknown> {
  let s: Record<string, unknown> = { type: "string" };
  for (let i = 0; i < levels; i++) s = { type: "object", properties: { next: s } };
  return s;
}

/** Runs `f` and reports how long it held the thread, for the messages and the generous bounds below. */
function timed<T>(f: () => T): [T, number] {
  const t0 = performance.now();
  const v = f();
  return [v, performance.now() - t0];
}

describe("argument checks cannot be made to run long by a schema or its arguments", () => {
  it("runs schema patterns on RE2: ^(a+)+$ answers like JavaScript would, at once, at any length", () => {
    const redos = tool("x.redos", { type: "object", properties: { s: { type: "string", pattern: "^(a+)+$" } } });
    const keys = tool("x.keys", { type: "object", patternProperties: { "^(a+)+$": { type: "number" } } });
    let worst = 0;
    let n = 0;
    fc.assert(
      fc.property(
        fc.oneof(
          fc.integer({ min: 20, max: 40 }).map((k) => `${"a".repeat(k)}!`),
          fc.integer({ min: 1, max: 200_000 }).map((k) => "a".repeat(k)),
          fc.stringMatching(/^[a!b]{0,50}$/),
        ),
        (s) => {
          n++;
          const all = /^a+$/.test(s);
          const [bad, ms] = timed(() => checkArguments(redos, { s }));
          const [badKey, ms2] = timed(() => checkArguments(keys, { [s]: "x" }));
          worst = Math.max(worst, ms, ms2);
          expect(bad === undefined).toBe(all);
          expect(badKey === undefined).toBe(!all);
        },
      ),
      { numRuns: 200 },
    );
    console.log(`schema: ${n} generated pattern arguments, worst check ${worst.toFixed(1)} ms`);
    // Backtracking takes 7 s at 31 characters, doubling with each one; RE2 stays in the milliseconds.
    expect(worst).toBeLessThan(500);
  });

  it("refuses, with a message, schemas whose patterns RE2 cannot run and schemas too big to check", () => {
    for (const pattern of ["^(?!x)\\w+$", "(a)\\1", "(?=a)b"]) {
      const t = tool("x.look", { type: "object", properties: { w: { type: "string", pattern } } });
      expect(checkArguments(t, { w: "abc" })).toMatch(/not a regular expression brokerd can check in linear time/);
    }
    expect(checkArguments(tool("x.deep", deepSchema(2000)), {})).toMatch(/too big to check .*nested more than 64/);
    const wide = Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`p${i}`, { type: "string" }]));
    expect(checkArguments(tool("x.wide", { type: "object", properties: wide }), {})).toMatch(/more than 2000 nodes/);
    const pats = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`p${i}`, { type: "string", pattern: "x" }]));
    expect(checkArguments(tool("x.pats", { type: "object", properties: pats }), {})).toMatch(/more than 100 patterns/);
    const branches = Array.from({ length: 201 }, (_, i) => ({ const: i }));
    expect(checkArguments(tool("x.any", { type: "object", properties: { a: { anyOf: branches } } }), {})).toMatch(
      /anyOf lists more than 200 schemas/,
    );
  });

  it("stops anyOf over $ref, exponential in the nesting, when its work budget is spent", () => {
    const rec = tool("x.rec", {
      type: "object",
      properties: { x: { $ref: "#/$defs/n" } },
      $defs: {
        n: {
          anyOf: [
            { type: "array", items: { $ref: "#/$defs/n" } },
            { type: "array", items: { $ref: "#/$defs/n" } },
          ],
        },
      },
    });
    let x: unknown = 1;
    for (let i = 0; i < 30; i++) x = [x];
    // Unbounded, depth 20 took 4.3 s and built 4 million error objects; depth 30 is 1,000 times that.
    const [bad, ms] = timed(() => checkArguments(rec, { x }));
    expect(bad).toMatch(/took more work than brokerd allows/);
    // Nested empty arrays are what the schema describes; a shallow one still checks.
    let shallow: unknown = [];
    for (let i = 0; i < 3; i++) shallow = [shallow];
    expect(checkArguments(rec, { x: shallow })).toBeUndefined();
    expect(checkArguments(rec, { x: [[["leaf"]]] })).toMatch(/must match a schema in anyOf/);
    console.log(`schema: anyOf over $ref at depth 30 stopped after ${ms.toFixed(0)} ms`);
    expect(ms).toBeLessThan(1000);
  });

  it("checks uniqueItems in linear time and agrees with a pairwise comparison (generated arrays)", () => {
    const u = tool("x.u", { type: "object", properties: { xs: { type: "array", uniqueItems: true } } });
    const item = fc.oneof(
      fc.integer({ min: 0, max: 5 }),
      fc.constantFrom("a", "b"),
      fc.constant(null),
      fc.dictionary(fc.constantFrom("k", "j"), fc.integer({ min: 0, max: 2 }), { maxKeys: 2 }),
      fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 2 }),
    );
    const sorted = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(sorted)
        : v && typeof v === "object"
          ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
          : v;
    fc.assert(
      fc.property(fc.array(item, { maxLength: 8 }), (xs) => {
        const keys = xs.map((x) => JSON.stringify(sorted(x)));
        const pairwiseUnique = keys.every((k, i) => keys.indexOf(k) === i);
        expect(checkArguments(u, { xs }) === undefined).toBe(pairwiseUnique);
      }),
      { numRuns: 300 },
    );
    // ajv compared every pair: 20,000 items took 4 s, a 1 MiB argument minutes.
    const [ok, ms] = timed(() => checkArguments(u, { xs: Array.from({ length: 20_000 }, (_, i) => [i]) }));
    expect(ok).toBeUndefined();
    const [big, ms2] = timed(() => checkArguments(u, { xs: Array.from({ length: 150_000 }, (_, i) => [i]) }));
    expect(big).toMatch(/took more work than brokerd allows/);
    console.log(
      `schema: uniqueItems over 20,000 items ${ms.toFixed(0)} ms, 150,000 stopped after ${ms2.toFixed(0)} ms`,
    );
    expect(Math.max(ms, ms2)).toBeLessThan(1000);
  });
});

describe("find_tool with a tool whose schema is 2,000 deep", () => {
  it("leaves that tool out (and logs it) and keeps finding the others", () => {
    const ok = tool("srv.echo", { type: "object", properties: { text: { type: "string" } } }, "Echo text back");
    const deep = tool("srv.nested", deepSchema(2000), "A nested document tool");
    const index = new ToolIndex([ok, deep]);
    expect(index.skipped).toEqual([{ name: "srv.nested", why: expect.stringMatching(/nested more than 64/) }]);
    expect(index.search("echo text", 5).map((r) => r.tool.name)).toEqual(["srv.echo"]);
    expect(index.search("nested document", 5).map((r) => r.tool.name)).not.toContain("srv.nested");

    const table = new ToolTable();
    table.replaceOrigin("test", [ok, deep]);
    const warned: unknown[] = [];
    const search = new ToolSearch(table, { warn: (obj: unknown) => void warned.push(obj) } as never);
    expect(search.search("echo", 5).map((r) => r.tool.name)).toEqual(["srv.echo"]);
    expect(warned).toEqual([{ tool: "srv.nested", why: expect.stringMatching(/nested more than 64/) }]);
  });
});
