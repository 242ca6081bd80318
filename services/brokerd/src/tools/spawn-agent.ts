import { ToolError, type ToolDef } from "../tool-table.js";

/**
 * A core tool that loopd runs (it starts a child session on the subagent
 * slot). It lives in this table so the epoch's tools array has one source;
 * brokerd only lists it and refuses to run it.
 */
export const spawnAgent: ToolDef = {
  name: "spawn_agent",
  description: "Run a subagent on a self-contained task; returns its final answer.",
  parameters: {
    type: "object",
    properties: { task: { type: "string", description: "The task, with all context the subagent needs" } },
    required: ["task"],
    additionalProperties: false,
  },
  risk: "exec",
  core: true,
  kind: "external",
  origin: "builtin",
  plan: () => {
    throw new ToolError("spawn_agent is run by the agent loop, not by the tool broker");
  },
};
