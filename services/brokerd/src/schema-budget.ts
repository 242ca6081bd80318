import type { Ajv, ErrorObject, SchemaValidateFunction } from "ajv";
import { RE2JS } from "re2js";

/**
 * Checking arguments against an MCP server's schema runs on brokerd's event
 * loop, before any policy, so the schema is hostile input: a `pattern` like
 * `^(a+)+$` backtracks exponentially, `anyOf` over a `$ref` re-validates each
 * node once per branch (exponential in the nesting), and ajv's uniqueItems
 * compares every pair. Here each of those costs work units against one
 * budget per check, and the check stops when it is spent.
 */

/**
 * A unit is about one RE2 step: the budget is about a tenth of a second of work
 * (docs/benchmarks.md, "Figures behind the code"), far above what checking real
 * arguments costs (a few thousand units).
 */
const VALIDATION_BUDGET = 30_000_000;
/** One evaluation of a subschema, the error objects ajv builds for it included (about 300 RE2 steps' time when every branch fails). */
const SUBSCHEMA_UNITS = 300;
/** One `enum` entry compared (ajv's deep-equal call). */
const ENUM_UNITS = 4;
/** One array item hashed for uniqueItems, besides its length (with the Map and the garbage it makes). */
const ITEM_UNITS = 600;
/** RE2 program size; `\p{L}{1000}` is ~1,000. Bigger programs cost more per character than they are worth. */
const MAX_PROGRAM_SIZE = 2_000;
/**
 * ajv's code generation grows faster than linearly in the patterns of a
 * schema and in the branches of one anyOf/oneOf/allOf (compile times in
 * docs/benchmarks.md, "Figures behind the code").
 */
const MAX_PATTERNS = 100;
const MAX_BRANCHES = 200;

/** Thrown from inside a validator when the budget is spent; checkArguments turns it into a message. */
export class BudgetSpent extends Error {}

/** A schema brokerd will not check arguments against: the message says why (a pattern RE2 cannot run, too many patterns). */
export class SchemaRefused extends Error {}

let left = VALIDATION_BUDGET;

function spend(units: number): void {
  left -= units;
  if (left < 0) throw new BudgetSpent();
}

/** Runs one validation with a fresh budget. */
export function withBudget<T>(f: () => T): T {
  left = VALIDATION_BUDGET;
  try {
    return f();
  } finally {
    left = VALIDATION_BUDGET;
  }
}

/**
 * ajv's `code.regExp`: patterns compile with RE2 (linear time in the input,
 * times the program size charged to the budget). ECMAScript syntax is
 * translated first (`\u00e9`, `(?<name>…)`); what RE2 cannot run is refused
 * at compile time instead of falling back to a backtracking engine.
 */
export const re2Engine = Object.assign(
  (pattern: string) => {
    let re: RE2JS;
    try {
      re = RE2JS.compile(RE2JS.translateRegExp(pattern), RE2JS.LOOKBEHINDS);
    } catch (err) {
      throw new SchemaRefused(
        `its pattern ${JSON.stringify(pattern)} is not a regular expression brokerd can check in linear time ` +
          `(backreferences and lookahead are not supported: ${err instanceof Error ? err.message : String(err)})`,
      );
    }
    const size = re.programSize();
    if (size > MAX_PROGRAM_SIZE)
      throw new SchemaRefused(
        `its pattern ${JSON.stringify(pattern)} compiles to ${size} RE2 instructions; the limit is ${MAX_PROGRAM_SIZE}`,
      );
    return {
      test(s: string): boolean {
        spend(size * (s.length + 1));
        return re.test(s);
      },
      // ajv keys its compiled patterns by this.
      toString: () => `/${re.pattern()}/`,
    };
  },
  { code: "re2js" },
);

class Close {
  constructor(readonly text: string) {}
}
const CLOSE_ARRAY = new Close("]");
const CLOSE_OBJECT = new Close("}");
const COMMA = new Close(",");

/** JSON with keys sorted, built without recursion: a 500,000-deep argument must not overflow the stack here. */
function canonical(v: unknown): string {
  if (!v || typeof v !== "object") return JSON.stringify(v) ?? "null";
  const out: string[] = [];
  const stack: unknown[] = [v];
  while (stack.length) {
    const x = stack.pop();
    if (x instanceof Close) out.push(x.text);
    else if (Array.isArray(x)) {
      out.push("[");
      stack.push(CLOSE_ARRAY);
      for (let i = x.length - 1; i >= 0; i--) {
        stack.push(x[i]);
        if (i > 0) stack.push(COMMA);
      }
    } else if (x && typeof x === "object") {
      out.push("{");
      stack.push(CLOSE_OBJECT);
      const keys = Object.keys(x).sort();
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push((x as Record<string, unknown>)[keys[i]!]);
        stack.push(new Close(`${i > 0 ? "," : ""}${JSON.stringify(keys[i])}:`));
      }
    } else out.push(JSON.stringify(x) ?? "null");
  }
  return out.join("");
}

/** Every key that holds one subschema, a map of them, or a list of them. */
const ONE = [
  "items",
  "additionalItems",
  "additionalProperties",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contains",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
];
const MAP = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"];
const LIST = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];

const TICK = "$bxWork";

/** What one evaluation of a subschema costs besides its children: the lists it walks. */
function weight(s: Record<string, unknown>): number {
  let w = SUBSCHEMA_UNITS;
  if (Array.isArray(s.enum)) w += ENUM_UNITS * s.enum.length;
  if (Array.isArray(s.required)) w += s.required.length;
  for (const k of ["properties", "patternProperties", "dependentRequired"])
    if (s[k] && typeof s[k] === "object") w += Object.keys(s[k]).length;
  if (s.const !== undefined && typeof s.const === "object") w += canonical(s.const).length;
  return w;
}

/**
 * A copy of the schema in which every subschema charges its weight each time
 * it is evaluated, however it is reached ($ref, anyOf branches, items of
 * items). The schema is already bounded in depth and size (schema-bounds.ts).
 */
export function metered(schema: unknown): unknown {
  const copy = structuredClone(schema);
  const stack: unknown[] = [copy];
  let patterns = 0;
  while (stack.length) {
    const s = stack.pop();
    if (!s || typeof s !== "object" || Array.isArray(s)) continue;
    const o = s as Record<string, unknown>;
    o[TICK] = weight(o);
    if (typeof o.pattern === "string") patterns++;
    if (o.patternProperties && typeof o.patternProperties === "object")
      patterns += Object.keys(o.patternProperties).length;
    if (patterns > MAX_PATTERNS) throw new SchemaRefused(`it has more than ${MAX_PATTERNS} patterns`);
    for (const k of ONE) if (o[k] && typeof o[k] === "object" && !Array.isArray(o[k])) stack.push(o[k]);
    for (const k of LIST) {
      const list = o[k];
      if (!Array.isArray(list)) continue;
      if (list.length > MAX_BRANCHES) throw new SchemaRefused(`its ${k} lists more than ${MAX_BRANCHES} schemas`);
      stack.push(...list);
    }
    for (const k of MAP) {
      const m = o[k];
      if (m && typeof m === "object" && !Array.isArray(m)) stack.push(...Object.values(m));
    }
  }
  return copy;
}

/** Installs the metering keyword and a linear uniqueItems (sorted-key JSON in a Map) in place of ajv's pairwise one. */
export function installBudgetKeywords(ajv: Ajv): void {
  ajv.addKeyword({
    keyword: TICK,
    schemaType: "number",
    errors: false,
    validate: (units: number) => {
      spend(units);
      return true;
    },
  });
  ajv.removeKeyword("uniqueItems");
  const unique: SchemaValidateFunction = (on: boolean, data: unknown[]): boolean => {
    if (!on) return true;
    const seen = new Map<string, number>();
    for (let i = 0; i < data.length; i++) {
      const key = canonical(data[i]);
      spend(ITEM_UNITS + key.length);
      const j = seen.get(key);
      if (j !== undefined) {
        unique.errors = [
          {
            keyword: "uniqueItems",
            message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
            params: { i, j },
          } satisfies Partial<ErrorObject>,
        ];
        return false;
      }
      seen.set(key, i);
    }
    return true;
  };
  ajv.addKeyword({ keyword: "uniqueItems", type: "array", schemaType: "boolean", validate: unique });
}
