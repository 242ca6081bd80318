import { createRequire } from "node:module";
import { runnableLineTest } from "@boxmaker/common";
import { sha256 } from "../blobs.js";
import { pointsAtGitDir } from "../policy/git-shape.js";
import type { ResolvedPath } from "../policy/paths.js";
import { Refused, ToolError } from "../errors.js";
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

const SUMMARY_HEAD_LINES = 40;
/** The most of a summary's runnable lines listed; past it the summary says how many were not. */
const SUMMARY_RUNNABLE_BYTES = 256 * 1024;

/**
 * A change too big to diff, as a person can still judge it: its sizes and hashes,
 * the new content's first lines, then every later line that can run, numbered
 * (a payload on line 3,500 of a hook is not left to "the new content starts").
 */
function summary(old: string | null, content: string, rel: string, why: string): string {
  const lines = content.split("\n");
  if (content.endsWith("\n")) lines.pop();
  const head = lines.slice(0, SUMMARY_HEAD_LINES).join("\n");
  const runs = runnableLineTest(rel, lines);
  const listed: string[] = [];
  let bytes = 0;
  let unlisted = 0;
  let inert = 0;
  for (let i = SUMMARY_HEAD_LINES; i < lines.length; i++) {
    const l = lines[i]!;
    if (!runs(l)) inert++;
    else if (bytes + l.length > SUMMARY_RUNNABLE_BYTES) unlisted++;
    else {
      listed.push(`${i + 1}: ${l}`);
      bytes += l.length + 8;
    }
  }
  const rest =
    lines.length <= SUMMARY_HEAD_LINES
      ? ""
      : `\n[past line ${SUMMARY_HEAD_LINES}, every line that can run, numbered (${inert} blank or comment lines left out)` +
        `${unlisted ? `; ${unlisted} more such lines are NOT listed: read the file before approving` : ""}:]\n${listed.join("\n")}`;
  return (
    `[diff of ${rel} not shown: ${why}. ${old === null ? "new file" : `was ${lineCount(old)} lines, ${Buffer.byteLength(old)} bytes, sha256 ${sha256(old)}`}; ` +
    `becomes ${lineCount(content)} lines, ${Buffer.byteLength(content)} bytes, sha256 ${sha256(content)}. The new content starts:]\n${head}${rest}`
  );
}

/**
 * A new file's diff, written out: every line added, with no diff to compute whatever its length,
 * byte for byte what jsdiff's createTwoFilesPatch makes of it.
 */
function creationPatch(content: string, rel: string): string {
  const lines = content.split("\n");
  const noEol = !content.endsWith("\n");
  if (!noEol) lines.pop();
  return (
    `${"=".repeat(67)}\n--- /dev/null\n+++ b/${rel}\n@@ -0,0 +1,${lines.length} @@\n` +
    lines.map((l) => `+${l}\n`).join("") +
    (noEol ? "\\ No newline at end of file\n" : "")
  );
}

/** A unified diff, or a summary when the inputs are too large or the diff takes too long. */
export function boundedPatch(old: string | null, content: string, rel: string): string {
  const lines = lineCount(old ?? "") + lineCount(content);
  const bytes = Buffer.byteLength(old ?? "") + Buffer.byteLength(content);
  // A new file costs no diff: shown whole up to the byte limit, however many lines it has.
  if (old === null && content !== "" && bytes <= DIFF_MAX_BYTES) return creationPatch(content, rel);
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
  const old = existsAt(p.root, p.rel)
    ? readFileAt(p.root, p.rel, ctx.guard.secretIds, ctx.config.limits.max_file_bytes).text
    : null;
  const content = next(old, p);
  // A `gitdir:` file is a repository elsewhere to git once it is renamed `.git`; no source file starts so.
  if (pointsAtGitDir(content))
    throw new Refused(
      "path:git-shape",
      `${p.rel} would start with "gitdir:", what git reads as a pointer to a repository it would run hooks from, so the model never writes it`,
    );
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
