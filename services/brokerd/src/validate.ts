import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { schemaOverBounds } from "./schema-bounds.js";
import { BudgetSpent, installBudgetKeywords, metered, re2Engine, SchemaRefused, withBudget } from "./schema-budget.js";
import type { ToolDef } from "./tool-table.js";
import { stableStringify } from "./tools-array.js";

// Not strict: MCP servers send schemas with keywords ajv does not know, and
// refusing those tools over it would help nobody. Patterns run on RE2 (schema-budget.ts).
// Without ajv's optimizer passes a schema compiles three to four times faster, on the event loop.
const ajv = new Ajv({
  strict: false,
  allErrors: true,
  validateFormats: false,
  code: { regExp: re2Engine, optimize: false },
});
installBudgetKeywords(ajv);

/** A validator; null when ajv cannot compile the schema (lax); a string when brokerd refuses to check against it. */
type Compiled = ValidateFunction | null | { refused: string };
const cache = new WeakMap<ToolDef, Compiled>();

function compile(tool: ToolDef): Compiled {
  let v = cache.get(tool);
  if (v === undefined) {
    v = compileOnce(tool);
    cache.set(tool, v);
  }
  return v;
}

function compileOnce(tool: ToolDef): Compiled {
  const big = schemaOverBounds(tool.parameters);
  if (big) return { refused: `${tool.name} cannot be called: its parameter schema is too big to check (${big})` };
  try {
    return ajv.compile(metered(tool.parameters) as object);
  } catch (err) {
    if (err instanceof SchemaRefused)
      return {
        refused: `${tool.name} cannot be called: brokerd does not check arguments against its schema: ${err.message}`,
      };
    return null;
  }
}

function explain(e: ErrorObject): string {
  const at = e.instancePath ? e.instancePath.slice(1).replace(/\//g, ".") : "arguments";
  if (e.keyword === "additionalProperties")
    return `${at}: unknown parameter "${(e.params as { additionalProperty: string }).additionalProperty}"`;
  if (e.keyword === "required")
    return `${at}: missing required parameter "${(e.params as { missingProperty: string }).missingProperty}"`;
  return `${at}: ${e.message ?? "is invalid"}`;
}

/** Undefined when valid; otherwise a message listing every problem and the schema to follow. */
export function checkArguments(tool: ToolDef, args: unknown): string | undefined {
  const v = compile(tool);
  if (v && "refused" in v) return v.refused;
  if (!v) {
    // An uncompilable schema still guarantees the shape every tool call has.
    return args && typeof args === "object" && !Array.isArray(args)
      ? undefined
      : `arguments for ${tool.name} must be a JSON object`;
  }
  let ok: boolean;
  try {
    ok = withBudget(() => v(args) as boolean);
  } catch (err) {
    if (!(err instanceof BudgetSpent || err instanceof RangeError)) throw err;
    return (
      `Invalid arguments for ${tool.name}: checking them against the tool's schema took more work than brokerd allows ` +
      `for one call; send smaller or less deeply nested arguments`
    );
  }
  if (ok) return undefined;
  const problems = [...new Set((v.errors ?? []).slice(0, 64).map(explain))].slice(0, 8);
  return `Invalid arguments for ${tool.name}: ${problems.join("; ")}. Expected parameters: ${stableStringify(tool.parameters)}`;
}
