import { StringEnum, Type } from "@boxmaker/common";
import { defineTool } from "./define-tool.js";

/** What brokerd answers when policy lets loopd run update_plan (loopd keeps the list). */
const UPDATE_PLAN_GO_AHEAD = "update_plan: allowed by policy; the agent loop keeps the plan";

/**
 * A core tool that loopd runs: the model's short task list. It only changes
 * the session's state, never a file, so it is a read by default; it lives in
 * this table so the epoch's tools array has one source. The bounds keep one
 * call small: the list is shown to a person on every change.
 */
export const updatePlan = defineTool({
  name: "update_plan",
  description: "Keep a short task list: send the whole list on each change, each item pending, in_progress or done.",
  parameters: Type.Object(
    {
      items: Type.Array(
        Type.Object(
          {
            content: Type.String({ minLength: 1, maxLength: 300 }),
            status: StringEnum(["pending", "in_progress", "done"]),
          },
          { additionalProperties: false },
        ),
        { minItems: 1, maxItems: 30 },
      ),
    },
    { additionalProperties: false },
  ),
  risk: "read",
  plan: (args) => ({
    paths: [],
    preview: `update_plan: ${args.items
      .map((i) => `[${i.status}] ${i.content}`)
      .join("; ")
      .slice(0, 2000)}`,
    checks: {},
    execute: async () => ({ text: UPDATE_PLAN_GO_AHEAD, isError: false }),
  }),
});
