import { Type } from "@boxmaker/common";
import type { MetaTool } from "../tool-table.js";

// find_tool and call_tool are answered by the broker itself (find-tool.ts,
// call-tool.ts); their entries here give the array their schemas.

export const findTool: MetaTool = {
  name: "find_tool",
  description: "Search the tools not listed here by what you need; returns their names and schemas for call_tool.",
  parameters: Type.Object(
    { query: Type.String({ description: "Words describing the task" }) },
    { additionalProperties: false },
  ),
  risk: "read",
  core: true,
  kind: "meta",
  origin: "builtin",
};

export const callTool: MetaTool = {
  name: "call_tool",
  description: "Call a tool that find_tool returned, by its name, with arguments matching its schema.",
  parameters: Type.Object(
    // Any object: the target's own schema checks it.
    { name: Type.String(), arguments: Type.Unsafe<Record<string, unknown>>({ type: "object" }) },
    { additionalProperties: false },
  ),
  risk: "read",
  core: true,
  kind: "meta",
  origin: "builtin",
};
