import { ToolError } from "../errors.js";
import { Type } from "@boxmaker/common";
import { defineTool } from "./define-tool.js";
import { planWrite, requireFile } from "./write-plan.js";

/** Occurrences of `needle`, not overlapping; stops counting at 2 since only "exactly once" matters. */
function occurrences(hay: string, needle: string): number {
  let n = 0;
  for (let i = hay.indexOf(needle); i >= 0 && n < 2; i = hay.indexOf(needle, i + needle.length)) n++;
  return n;
}

export const editFile = defineTool({
  name: "edit_file",
  description:
    "Replace old_text with new_text in a workspace file. old_text must match exactly once, whitespace included.",
  parameters: Type.Object(
    { path: Type.String(), old_text: Type.String(), new_text: Type.String() },
    { additionalProperties: false },
  ),
  risk: "write",
  plan(args, ctx) {
    if (args.old_text === "") throw new ToolError("old_text is empty; give the exact text to replace");
    if (args.old_text === args.new_text) throw new ToolError("old_text and new_text are the same; nothing to change");
    return planWrite(ctx, args.path, (old, p) => {
      const text = requireFile(old, p.rel);
      const n = occurrences(text, args.old_text);
      if (n === 0) {
        throw new ToolError(
          `old_text was not found in ${p.rel}; read_file it and copy the exact text, including indentation`,
        );
      }
      if (n > 1) {
        throw new ToolError(
          `old_text matches more than one place in ${p.rel}; include more surrounding lines so it matches once`,
        );
      }
      const at = text.indexOf(args.old_text);
      return text.slice(0, at) + args.new_text + text.slice(at + args.old_text.length);
    });
  },
});
