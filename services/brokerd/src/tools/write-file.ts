import type { ToolDef } from "../tool-table.js";
import { planWrite } from "./write-plan.js";

export const writeFile: ToolDef = {
  name: "write_file",
  description: "Create or overwrite a workspace file with the full content given. May need a person's approval.",
  parameters: {
    type: "object",
    properties: { path: { type: "string" }, content: { type: "string" } },
    required: ["path", "content"],
    additionalProperties: false,
  },
  risk: "write",
  core: true,
  kind: "builtin",
  origin: "builtin",
  plan(args: { path: string; content: string }, ctx) {
    return planWrite(ctx, args.path, () => args.content);
  },
};
