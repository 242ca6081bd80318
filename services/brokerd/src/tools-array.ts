import { sha256 } from "./blobs.js";
import type { ToolDef } from "./tool-table.js";

/**
 * JSON with object keys sorted, except the members of `properties`, whose
 * order is the order the model reads the parameters in. The result depends on
 * the table's content only, never on how a config file happened to order keys.
 */
export function stableStringify(value: unknown, keepOrder = false): string {
  if (Array.isArray(value)) return `[${value.map((v) => stableStringify(v)).join(",")}]`;
  if (value && typeof value === "object") {
    const keys = Object.keys(value);
    if (!keepOrder) keys.sort();
    const parts = keys
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableStringify((value as Record<string, unknown>)[k], k === "properties")}`);
    return `{${parts.join(",")}}`;
  }
  return JSON.stringify(value);
}

export interface ToolsArray {
  json: string;
  sha256: string;
  names: string[];
}

/** The epoch's tools array in chat-completions form: core tools only, in table order. */
export function buildToolsArray(core: readonly ToolDef[]): ToolsArray {
  const tools = core.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
  const json = stableStringify(tools);
  return { json, sha256: sha256(json), names: core.map((t) => t.name) };
}
