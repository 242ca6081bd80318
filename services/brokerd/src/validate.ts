import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import type { ToolDef } from "./tool-table.js";
import { stableStringify } from "./tools-array.js";

// Not strict: MCP servers send schemas with keywords ajv does not know, and
// refusing those tools over it would help nobody.
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
const cache = new WeakMap<ToolDef, ValidateFunction | null>();

function compile(tool: ToolDef): ValidateFunction | null {
  let v = cache.get(tool);
  if (v === undefined) {
    try {
      v = ajv.compile(tool.parameters);
    } catch {
      v = null;
    }
    cache.set(tool, v);
  }
  return v;
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
  if (!v) {
    // An uncompilable schema still guarantees the shape every tool call has.
    return args && typeof args === "object" && !Array.isArray(args)
      ? undefined
      : `arguments for ${tool.name} must be a JSON object`;
  }
  if (v(args)) return undefined;
  const problems = [...new Set((v.errors ?? []).map(explain))].slice(0, 8);
  return `Invalid arguments for ${tool.name}: ${problems.join("; ")}. Expected parameters: ${stableStringify(tool.parameters)}`;
}
