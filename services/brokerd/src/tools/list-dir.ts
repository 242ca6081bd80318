import { join } from "node:path";
import { Type } from "@boxmaker/common";
import { defineTool } from "./define-tool.js";
import { listDirAt } from "./fs-read.js";

export const listDir = defineTool({
  name: "list_dir",
  description: "List a workspace directory: dirs end in /, files show their size, symlinks their target.",
  parameters: Type.Object(
    { path: Type.Optional(Type.String({ description: "Defaults to the workspace root" })) },
    { additionalProperties: false },
  ),
  risk: "read",
  plan(args, ctx) {
    const p = ctx.guard.resolve(args.path ?? ".", { write: false });
    return {
      paths: [p],
      async execute() {
        // Listed through the fd the no-symlink walk reached: a swap after the check fails the walk.
        const cap = ctx.config.limits.list_max_entries;
        const { entries, total } = listDirAt(p.root, p.rel, cap);
        const out: string[] = [];
        for (const e of entries) {
          const rel = p.rel === "." ? e.name : `${p.rel}/${e.name}`;
          const secret = ctx.guard.isSecret(rel, join(p.abs, e.name)) ? "  (secret: not readable)" : "";
          if (e.kind === "dir") out.push(`${e.name}/${secret}`);
          else if (e.kind === "symlink") out.push(`${e.name} -> ${e.target}${secret}`);
          else if (e.kind === "file") out.push(`${e.name}  ${e.size}${secret}`);
          else out.push(`${e.name}  (special file)`);
        }
        if (total > cap) out.push(`[… ${total - cap} more entries not shown]`);
        if (out.length === 0) out.push("(empty directory)");
        return { text: out.join("\n"), isError: false };
      },
    };
  },
});
