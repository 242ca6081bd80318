import { ToolError } from "../errors.js";
import type { ToolDef } from "../tool-table.js";

// find_tool and call_tool are answered by the broker itself (find-tool.ts,
// call-tool.ts); their entries here give the array their schemas.
const handledByBroker = (): never => {
  throw new ToolError("internal: meta tools are dispatched by the broker");
};

export const findTool: ToolDef = {
  name: "find_tool",
  description: "Search the tools not listed here by what you need; returns their names and schemas for call_tool.",
  parameters: {
    type: "object",
    properties: { query: { type: "string", description: "Words describing the task" } },
    required: ["query"],
    additionalProperties: false,
  },
  risk: "read",
  core: true,
  kind: "meta",
  origin: "builtin",
  plan: handledByBroker,
};

export const callTool: ToolDef = {
  name: "call_tool",
  description: "Call a tool that find_tool returned, by its name, with arguments matching its schema.",
  parameters: {
    type: "object",
    properties: { name: { type: "string" }, arguments: { type: "object" } },
    required: ["name", "arguments"],
    additionalProperties: false,
  },
  risk: "read",
  core: true,
  kind: "meta",
  origin: "builtin",
  plan: handledByBroker,
};
