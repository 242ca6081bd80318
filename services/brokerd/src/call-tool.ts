import type { ToolDef, ToolTable } from "./tool-table.js";

export type Resolution = { ok: true; tool: ToolDef; args: unknown } | { ok: false; rule: string; message: string };

/**
 * Models sometimes send `arguments` as a JSON string instead of an object.
 * Decoding it is lossless, so accept it rather than spend a turn on the error.
 */
export function normalizeCallToolArgs(raw: unknown): unknown {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return raw;
  const r = raw as Record<string, unknown>;
  if (typeof r.arguments !== "string") return raw;
  try {
    const parsed: unknown = JSON.parse(r.arguments);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return { ...r, arguments: parsed };
  } catch {
    /* left for schema validation to report */
  }
  return raw;
}

/**
 * Which tool a call_tool call may run, and otherwise what the model should do
 * instead. Every message names only tools in the array (find_tool, call_tool):
 * a model told to call an undeclared name is forced by the grammar into a wrong one.
 */
export function resolveCallTool(
  call: { name: string; arguments: unknown },
  table: ToolTable,
  disclosed: (name: string) => boolean,
): Resolution {
  const name = call.name.trim();
  if (name === "call_tool") {
    return {
      ok: false,
      rule: "call_tool:nested",
      message: "call_tool cannot call itself; give the target tool's name directly.",
    };
  }
  const tool = table.get(name);
  if (!tool) {
    return {
      ok: false,
      rule: "call_tool:unknown",
      message: `There is no tool named "${name}". Call find_tool with words describing what you need; it returns the exact names call_tool accepts.`,
    };
  }
  if (!tool.core && !disclosed(name)) {
    return {
      ok: false,
      rule: "call_tool:undisclosed",
      message: `"${name}" has not been looked up in this session. Call find_tool first (for example find_tool({"query": "${name}"})), then call_tool with the schema it returns.`,
    };
  }
  return { ok: true, tool, args: call.arguments };
}
