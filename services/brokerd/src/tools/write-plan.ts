import { createRequire } from "node:module";
import { sha256 } from "../blobs.js";
import type { ResolvedPath } from "../policy/paths.js";
import { ToolError } from "../errors.js";
import type { Plan, ToolContext } from "../tool-table.js";
import { existsAt, readFileAt } from "./fs-read.js";
import { writeFileAt } from "./fs-write.js";

// The diff library is loaded with the first change that shows one: an idle brokerd
// (or one that never writes) does not carry it.
const load = createRequire(import.meta.url);
let loaded: typeof import("diff") | undefined;
const diffLib = () => (loaded ??= load("diff") as typeof import("diff"));

const ABSENT = "absent";

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
/** Above these sizes a diff is summarised, not computed: Myers' diff of a big rewrite would stall every call. */
const DIFF_MAX_LINES = 3000;
const DIFF_MAX_BYTES = 512 * 1024;
const DIFF_TIMEOUT_MS = 250;

function summary(old: string | null, content: string, rel: string, why: string): string {
  const head = content.split("\n", 41).slice(0, 40).join("\n");
  return (
    `[diff of ${rel} not shown: ${why}. ${old === null ? "new file" : `was ${lineCount(old)} lines, ${Buffer.byteLength(old)} bytes, sha256 ${sha256(old)}`}; ` +
    `becomes ${lineCount(content)} lines, ${Buffer.byteLength(content)} bytes, sha256 ${sha256(content)}. The new content starts:]\n${head}`
  );
}

/** A unified diff, or a summary when the inputs are too large or the diff takes too long. */
export function boundedPatch(old: string | null, content: string, rel: string): string {
  const lines = lineCount(old ?? "") + lineCount(content);
  const bytes = Buffer.byteLength(old ?? "") + Buffer.byteLength(content);
  if (lines > DIFF_MAX_LINES || bytes > DIFF_MAX_BYTES)
    return summary(old, content, rel, `the change spans ${lines} lines / ${bytes} bytes, above the diff limit`);
  const patch = diffLib().createTwoFilesPatch(
    old === null ? "/dev/null" : `a/${rel}`,
    `b/${rel}`,
    old ?? "",
    content,
    undefined,
    undefined,
    {
      context: 3,
      timeout: DIFF_TIMEOUT_MS,
    },
  ) as string | undefined;
  return patch ?? summary(old, content, rel, `the diff took longer than ${DIFF_TIMEOUT_MS} ms`);
}

export function planWrite(
  ctx: ToolContext,
  input: string,
  next: (old: string | null, p: ResolvedPath) => string,
): Plan {
  const p = ctx.guard.resolve(input, { write: true });
  const old = existsAt(p.root, p.rel) ? readFileAt(p.root, p.rel, ctx.config.limits.max_file_bytes).text : null;
  const content = next(old, p);
  const preview = boundedPatch(old, content, p.rel);
  return {
    paths: [p],
    preview,
    checks: { path: p.abs, base_sha256: old === null ? ABSENT : sha256(old) },
    change: { path: p, before: old, after: content },
    async execute() {
      writeFileAt(p.root, p.rel, content);
      ctx.guard.wroteFile(p.abs);
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
