import { createTwoFilesPatch } from "diff";
import { sha256 } from "../blobs.js";
import type { ResolvedPath } from "../policy/paths.js";
import { ToolError, type Plan, type ToolContext } from "../tool-table.js";
import { readCanonical, writeCanonical } from "./fs-io.js";

export const ABSENT = "absent";

/** Lines as an editor counts them: a final newline ends the last line, it does not start another. */
export function lineCount(s: string): number {
  if (s === "") return 0;
  const n = s.split("\n").length;
  return s.endsWith("\n") ? n - 1 : n;
}

/**
 * The plan both file-writing tools share: the new content is computed against
 * the file as it is now, and the checks record the canonical path and the hash
 * of that base. Approval re-plans against the disk and must find both unchanged.
 */
export function planWrite(ctx: ToolContext, input: string, next: (old: string | null, p: ResolvedPath) => string): Plan {
  const p = ctx.guard.resolve(input, { write: true });
  const old = p.exists ? readCanonical(p.abs, ctx.config.limits.max_file_bytes).text : null;
  const content = next(old, p);
  const preview = createTwoFilesPatch(
    old === null ? "/dev/null" : `a/${p.rel}`,
    `b/${p.rel}`,
    old ?? "",
    content,
    undefined,
    undefined,
    { context: 3 },
  );
  return {
    paths: [p],
    preview,
    checks: { path: p.abs, base_sha256: old === null ? ABSENT : sha256(old) },
    async execute() {
      writeCanonical(p.abs, content);
      const verb = old === null ? "Created" : "Wrote";
      return {
        text: `${verb} ${p.rel}: ${Buffer.byteLength(content)} bytes, ${lineCount(content)} lines (was ${old === null ? "absent" : `${lineCount(old)} lines`}).`,
        isError: false,
      };
    },
  };
}

export function requireFile(old: string | null, rel: string): string {
  if (old === null) throw new ToolError(`${rel} does not exist; use write_file to create it`);
  return old;
}
