import { LOOP_TOOL_SPECS } from "@boxmaker/common";
import { defineTool } from "./define-tool.js";

/** What brokerd answers when policy lets loopd run update_plan (loopd keeps the list). */
const UPDATE_PLAN_GO_AHEAD = `${LOOP_TOOL_SPECS.updatePlan.name}: allowed by policy; the agent loop keeps the plan`;

/**
 * A core tool that loopd runs: the model's short task list (its schema is
 * common's, loopd reads the call with it). It only changes the session's
 * state, never a file, so it is a read by default; it lives in this table so
 * the epoch's tools array has one source.
 */
export const updatePlan = defineTool({
  ...LOOP_TOOL_SPECS.updatePlan,
  risk: "read",
  plan: (args) => ({
    paths: [],
    preview: `${LOOP_TOOL_SPECS.updatePlan.name}: ${args.items
      .map((i) => `[${i.status}] ${i.content}`)
      .join("; ")
      .slice(0, 2000)}`,
    checks: {},
    execute: async () => ({ text: UPDATE_PLAN_GO_AHEAD, isError: false }),
  }),
});
