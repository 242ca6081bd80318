import { LOOP_TOOL_SPECS, spawnAgentProblem } from "@boxmaker/common";
import { ToolError } from "../errors.js";
import { defineTool } from "./define-tool.js";

/** What brokerd answers when policy lets loopd run spawn_agent (loopd matches on it). */
const SPAWN_AGENT_GO_AHEAD = `${LOOP_TOOL_SPECS.spawnAgent.name}: allowed by policy; the agent loop runs it`;

/**
 * A core tool that loopd runs (it starts a child session on the subagent
 * slot; its schema is common's, loopd reads the call with it). It lives in
 * this table so the epoch's tools array has one source; brokerd plans it only
 * as the policy's gate and never runs it.
 */

export const spawnAgent = defineTool({
  ...LOOP_TOOL_SPECS.spawnAgent,
  // Its own calls go through policy one by one; starting it is harmless by default (allow),
  // and an operator rule on spawn_agent can deny it or reserve it for a person.
  risk: "read",
  // loopd runs the subagent, but asks this policy first with the same call: the
  // plan only gates (deny / stage for a person / allow) and its "execution" is the
  // go-ahead text loopd checks before it starts the child session.
  plan: (args) => {
    const bad = spawnAgentProblem(args);
    if (bad) throw new ToolError(bad);
    return {
      paths: [],
      preview: `${LOOP_TOOL_SPECS.spawnAgent.name}: ${args.task.slice(0, 2000)}`,
      checks: {},
      execute: async () => ({ text: SPAWN_AGENT_GO_AHEAD, isError: false }),
    };
  },
});
