import { type Static, Type } from "@boxmaker/common";
import type { MetaTool } from "../tool-table.js";

// find_tool and call_tool are answered by the broker itself (find-tool.ts,
// call-tool.ts); their entries here give the array their schemas.

const findToolParameters = Type.Object(
  { query: Type.String({ description: "Words describing the task" }) },
  { additionalProperties: false },
);
const callToolParameters = Type.Object(
  // Any object: the target's own schema checks it.
  { name: Type.String(), arguments: Type.Unsafe<Record<string, unknown>>({ type: "object" }) },
  { additionalProperties: false },
);
/** What the broker reads of a find_tool or call_tool call, once the schema accepted it. */
export type FindToolArgs = Static<typeof findToolParameters>;
export type CallToolArgs = Static<typeof callToolParameters>;

export const findTool: MetaTool = {
  name: "find_tool",
  description: "Search the tools not listed here by what you need; returns their names and schemas for call_tool.",
  parameters: findToolParameters,
  risk: "read",
  core: true,
  kind: "meta",
  origin: "builtin",
};

export const callTool: MetaTool = {
  name: "call_tool",
  description: "Call a tool that find_tool returned, by its name, with arguments matching its schema.",
  parameters: callToolParameters,
  risk: "read",
  core: true,
  kind: "meta",
  origin: "builtin",
};
