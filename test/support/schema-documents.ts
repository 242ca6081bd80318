import fc from "fast-check";
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { parseConfig } from "@boxmaker/common";

type Schema = Record<string, unknown>;

/** Anything a file could hold where a value goes: the wrong-typed documents. */
const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.string({ maxLength: 8 }),
  fc.constant([]),
  fc.constant({}),
  fc.constant(2 ** 60),
);

function bounded(s: Schema, integer: boolean): fc.Arbitrary<number> {
  const lo =
    typeof s.minimum === "number" ? s.minimum : typeof s.exclusiveMinimum === "number" ? s.exclusiveMinimum : 0;
  const hi = typeof s.maximum === "number" ? s.maximum : lo + 100;
  // One past each bound on both sides: the edges are where two schemas would differ.
  const edges = fc.constantFrom(lo - 1, lo, hi, hi + 1, lo + 0.5);
  const inside = integer ? fc.integer({ min: lo, max: hi }) : fc.double({ min: lo, max: hi, noNaN: true });
  return fc.oneof({ arbitrary: inside, weight: 6 }, { arbitrary: edges, weight: 1 });
}

function stringOf(s: Schema): fc.Arbitrary<string> {
  const near: fc.Arbitrary<string>[] = [fc.string({ maxLength: 3 })];
  if (typeof s.maxLength === "number") near.push(fc.string({ minLength: s.maxLength, maxLength: s.maxLength + 1 }));
  const likely =
    typeof s.pattern === "string"
      ? fc.stringMatching(new RegExp(s.pattern))
      : fc.string({ minLength: typeof s.minLength === "number" ? s.minLength : 0, maxLength: 12 });
  return fc.oneof({ arbitrary: likely, weight: 6 }, ...near);
}

/**
 * Documents for a JSON Schema of the shapes the daemons' configs use, most of
 * them close to valid (known keys, values at and past each bound, every enum
 * member, both branches of an if/then/else) and some wrong in one place (a
 * value of another type, an unknown key): the documents where two schemas
 * that should be the same would disagree.
 */
export function documentOf(s: Schema, depth = 0): fc.Arbitrary<unknown> {
  const valid = validish(s, depth);
  const nullable = s.nullable === true ? [fc.constant(null)] : [];
  return fc.oneof({ arbitrary: valid, weight: 30 }, ...nullable, { arbitrary: junk, weight: 1 });
}

function validish(s: Schema, depth: number): fc.Arbitrary<unknown> {
  if (Array.isArray(s.enum))
    return fc.oneof({ arbitrary: fc.constantFrom(...s.enum), weight: 8 }, fc.string({ maxLength: 4 }));
  if (typeof s.const === "string") return fc.constant(s.const);
  const type = s.type;
  if (type === "string") return stringOf(s);
  if (type === "integer") return bounded(s, true);
  if (type === "number") return bounded(s, false);
  if (type === "boolean") return fc.boolean();
  if (depth > 6) return junk;
  if (type === "array") {
    const items = (s.items ?? {}) as Schema;
    return fc.array(documentOf(items, depth + 1), { maxLength: 3 });
  }
  if (type === "object" || s.properties) {
    const props = (s.properties ?? {}) as Record<string, Schema>;
    // A few keys at a time: a document wrong in many places says little about any one of them.
    const known = fc
      .subarray(Object.keys(props), { maxLength: Math.min(4, Object.keys(props).length) })
      .chain((keys) => fc.record(Object.fromEntries(keys.map((k) => [k, documentOf(props[k]!, depth + 1)]))));
    const rest = typeof s.additionalProperties === "object" ? (s.additionalProperties as Schema) : undefined;
    const extra = rest
      ? fc.dictionary(fc.stringMatching(/^[a-z_-]{1,6}$/), documentOf(rest, depth + 1), { maxKeys: 2 })
      : fc.oneof({ arbitrary: fc.constant({}), weight: 12 }, fc.constant({ not_a_setting: 1 }));
    return fc.tuple(known, extra).map(([a, b]) => ({ ...b, ...a }));
  }
  return junk;
}

type Outcome = { ok: unknown } | { error: string };

function outcome(schema: object, doc: unknown): Outcome {
  try {
    return { ok: parseConfig<unknown>(schema, doc, "config") };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/**
 * Old and new schema take the same documents, fill the same defaults and
 * refuse the rest with the same one-line message. Returns how many of the
 * generated documents were accepted, so a caller can check both sides ran.
 */
export function expectSameVerdicts(
  old: Schema,
  current: object,
  numRuns: number,
): { accepted: number; refused: number } {
  let accepted = 0;
  let refused = 0;
  fc.assert(
    fc.property(documentOf(old), (doc) => {
      const a = outcome(old, doc);
      const b = outcome(current, doc);
      expect(b).toEqual(a);
      if ("ok" in a) accepted++;
      else refused++;
    }),
    { numRuns },
  );
  return { accepted, refused };
}

/**
 * The schema with its keys sorted and `required` without the keys that have a
 * default: ajv fills defaults before it checks `required`, so such a key is
 * there either way, and TypeBox lists every key not marked optional.
 */
export function canonicalSchema(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonicalSchema);
  if (!v || typeof v !== "object") return v;
  const o = v as Schema;
  const props = (o.properties ?? {}) as Record<string, Schema>;
  const out: Schema = {};
  for (const k of Object.keys(o).sort()) {
    if (k === "required" && Array.isArray(o.required)) {
      const needed = (o.required as string[]).filter((r) => !(props[r] && "default" in props[r]));
      if (needed.length) out.required = needed;
    } else out[k] = canonicalSchema(o[k]);
  }
  return out;
}

/**
 * The two checks every daemon's TypeBox schema gets against the hand-written
 * one it replaced (recorded in the test's fixtures): the same schema up to key
 * order and defaulted keys in `required`, and the same verdict on 600
 * generated files. Called inside the daemon's describe block.
 */
export function itMatchesTheRecordedSchema(current: object, fixture: URL): void {
  const before = JSON.parse(readFileSync(fixture, "utf8")) as Schema;
  it("is the hand-written schema it replaced, up to key order and defaulted keys listed as required", () => {
    expect(canonicalSchema(JSON.parse(JSON.stringify(current)))).toEqual(canonicalSchema(before));
  });

  it("accepts, fills and refuses 600 generated files exactly as the hand-written schema did", () => {
    const { accepted, refused } = expectSameVerdicts(before, current, 600);
    // Both verdicts occur, so the comparison is not between two schemas that refuse everything.
    expect(accepted).toBeGreaterThan(30);
    expect(refused).toBeGreaterThan(30);
  });
}
