import { Type } from "@boxmaker/common";
import { defineTool } from "./define-tool.js";
import { planWrite } from "./write-plan.js";

export const writeFile = defineTool({
  name: "write_file",
  description: "Create or overwrite a workspace file with the full content given. May need a person's approval.",
  parameters: Type.Object({ path: Type.String(), content: Type.String() }, { additionalProperties: false }),
  risk: "write",
  plan(args, ctx) {
    return planWrite(ctx, args.path, () => args.content);
  },
});
