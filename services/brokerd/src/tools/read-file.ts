import { closeSync } from "node:fs";
import { ToolError } from "../errors.js";
import { Type } from "@boxmaker/common";
import { defineTool } from "./define-tool.js";
import { readFileAt, readLinesAt } from "./fs-read.js";
import { openFileAt, type SecretCheck } from "./fs-walk.js";

/** How much of one line a ranged read of a huge file keeps. */
const MAX_LINE_BYTES = 64 * 1024;

function sizeAt(root: string, rel: string, secrets: SecretCheck): number {
  const { fd, st } = openFileAt(root, rel, secrets);
  closeSync(fd);
  return st.size;
}

export const readFile = defineTool({
  name: "read_file",
  description: "Read a text file in the workspace. Optional 1-based inclusive line range.",
  parameters: Type.Object(
    {
      path: Type.String({ description: "Path relative to the workspace" }),
      start_line: Type.Optional(Type.Integer({ minimum: 1 })),
      end_line: Type.Optional(Type.Integer({ minimum: 1 })),
    },
    { additionalProperties: false },
  ),
  risk: "read",
  plan(args, ctx) {
    const p = ctx.guard.resolve(args.path, { write: false });
    const from = args.start_line ?? 1;
    const to = args.end_line ?? Number.MAX_SAFE_INTEGER;
    if (to < from) throw new ToolError(`end_line ${to} is before start_line ${from}`);
    return {
      paths: [p],
      async execute() {
        const max = ctx.config.limits.max_file_bytes;
        const ranged = args.start_line !== undefined || args.end_line !== undefined;
        let lines: string[];
        let total: number | undefined;
        let cut = false;
        let stopped: number | undefined;
        if (ranged && sizeAt(p.root, p.rel, ctx.guard.secretIds) > max) {
          ({ lines, total, cut, stopped } = await readLinesAt(p.root, p.rel, ctx.guard.secretIds, from, to, {
            maxLine: MAX_LINE_BYTES,
            maxBytes: max,
            signal: ctx.signal,
          }));
        } else {
          const all = readFileAt(p.root, p.rel, ctx.guard.secretIds, max).text.split("\n");
          if (all.length > 1 && all[all.length - 1] === "") all.pop();
          total = all.length;
          lines = all.slice(from - 1, to === Number.MAX_SAFE_INTEGER ? undefined : to);
        }
        if (total === 0) return { text: `[${p.rel} is empty]`, isError: false };
        if (lines.length === 0) {
          throw new ToolError(`${p.rel} has ${total} lines; start_line ${from} is past the end`);
        }
        const last = from + lines.length - 1;
        const header = ranged ? `[${p.rel}: lines ${from}-${last} of ${total ?? "more"}]\n` : "";
        const note = stopped
          ? `\n[… the scan stopped after ${stopped} bytes; lines past that point are not reachable with read_file, use run_command (e.g. sed -n) instead]`
          : cut
            ? `\n[… long lines were cut at ${MAX_LINE_BYTES} bytes, or the range at ${max} bytes]`
            : "";
        return { text: header + lines.join("\n") + note, isError: false };
      },
    };
  },
});
