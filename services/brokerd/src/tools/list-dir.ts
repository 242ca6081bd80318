import { readdirSync, readlinkSync, statSync } from "node:fs";
import { join } from "node:path";
import { ToolError, type ToolDef } from "../tool-table.js";

export const listDir: ToolDef = {
  name: "list_dir",
  description: "List a workspace directory: dirs end in /, files show their size, symlinks their target.",
  parameters: {
    type: "object",
    properties: { path: { type: "string", description: "Defaults to the workspace root" } },
    additionalProperties: false,
  },
  risk: "read",
  core: true,
  kind: "builtin",
  origin: "builtin",
  plan(args: { path?: string }, ctx) {
    const p = ctx.guard.resolve(args.path ?? ".", { write: false });
    return {
      paths: [p],
      async execute() {
        let entries;
        try {
          entries = readdirSync(p.abs, { withFileTypes: true });
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === "ENOTDIR") throw new ToolError(`${p.rel} is a file; use read_file`);
          if (code === "ENOENT") throw new ToolError(`${p.rel} does not exist`);
          throw err;
        }
        entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        const cap = ctx.config.limits.list_max_entries;
        const out: string[] = [];
        for (const e of entries.slice(0, cap)) {
          const rel = p.rel === "." ? e.name : `${p.rel}/${e.name}`;
          const secret = ctx.guard.isSecret(rel, join(p.abs, e.name)) ? "  (secret: not readable)" : "";
          if (e.isDirectory()) out.push(`${e.name}/${secret}`);
          else if (e.isSymbolicLink()) out.push(`${e.name} -> ${readlinkSync(join(p.abs, e.name))}${secret}`);
          else if (e.isFile()) out.push(`${e.name}  ${statSync(join(p.abs, e.name)).size}${secret}`);
          else out.push(`${e.name}  (special file)`);
        }
        if (entries.length > cap) out.push(`[… ${entries.length - cap} more entries not shown]`);
        if (out.length === 0) out.push("(empty directory)");
        return { text: out.join("\n"), isError: false };
      },
    };
  },
};
