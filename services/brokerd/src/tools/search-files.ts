import { closeSync, constants, lstatSync, openSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import { compileGlob } from "../policy/glob.js";
import { Refused } from "../errors.js";
import { Type } from "@boxmaker/common";
import { defineTool } from "./define-tool.js";
import { components, fdPath, MAX_DEPTH, openDirAt, openFileAt, openRoot } from "./fs-walk.js";
import { checkPattern, type RegexResult, runRegex } from "./regex-worker.js";
import { searchSlots } from "./search-slots.js";

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const MAX_GLOB = 256;

const SKIP_DIRS = new Set([".git", "node_modules"]);
/**
 * The walk runs on brokerd's thread (the path rules live there): a tree of
 * 20,000 files is a few hundred milliseconds of lstat and rule checks, so
 * it gives the event loop a turn whenever it has held it this long.
 */
const WALK_SLICE_MS = 20;

export const searchFiles = defineTool({
  name: "search_files",
  description: "Search workspace files for a regex; returns path:line: text. Skips .git and node_modules.",
  parameters: Type.Object(
    {
      pattern: Type.String({ description: "JavaScript regular expression" }),
      path: Type.Optional(Type.String({ description: "Directory or file; default the workspace root" })),
      glob: Type.Optional(Type.String({ description: "File name filter, e.g. *.ts" })),
      ignore_case: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false },
  ),
  risk: "read",
  plan(args, ctx) {
    const ignoreCase = args.ignore_case ?? false;
    checkPattern(args.pattern, ignoreCase);
    const p = ctx.guard.resolve(args.path ?? ".", { write: false });
    if (args.glob !== undefined && args.glob.length > MAX_GLOB)
      throw new Refused("limit:glob-length", `the glob is longer than ${MAX_GLOB} characters`);
    const nameRe = args.glob ? compileGlob(args.glob) : undefined;
    const {
      search_max_files: maxFiles,
      search_max_matches: maxMatches,
      max_file_bytes,
      search_timeout_ms,
    } = ctx.config.limits;
    return {
      paths: [p],
      async execute() {
        // A slot before the walk: thirty searches at once would otherwise walk back to back
        // on the event loop and then start thirty workers.
        const release = await searchSlots.acquire(ctx.signal);
        if (!release) {
          throw new Refused(
            "limit:search-busy",
            `${searchSlots.running} searches (search_files and grep_blob) are running and ${searchSlots.waiting} ` +
              "are waiting; wait for their results before starting another",
          );
        }
        try {
          return await search();
        } finally {
          release();
        }
      },
    };

    async function search() {
      // The walk runs here, where the path rules live: every directory is opened through its
      // parent's fd with O_NOFOLLOW (a swap to a symlink ends that branch), no secret is read,
      // and a file a path rule denies (or reserves for a person) is not opened.
      const files: Array<{ rel: string; abs: string }> = [];
      let walkTruncated = false;
      let ruled = 0;
      let sliceStart = performance.now();
      const admit = (rel: string, abs: string): boolean => {
        if (ctx.guard.isSecret(rel, abs)) return false;
        if (ctx.pathRuled?.(rel, abs)) {
          ruled++;
          return false;
        }
        return true;
      };
      const take = (rel: string, abs: string) => {
        const name = rel.slice(rel.lastIndexOf("/") + 1);
        if (!nameRe || nameRe.test(name)) files.push({ rel, abs });
      };
      const walk = async (dirfd: number, abs: string, rel: string, depth: number): Promise<void> => {
        let names: string[];
        try {
          names = readdirSync(fdPath(dirfd)).sort();
        } catch {
          return;
        }
        for (const n of names) {
          if (performance.now() - sliceStart > WALK_SLICE_MS) {
            await nextTurn();
            ctx.signal?.throwIfAborted();
            sliceStart = performance.now();
          }
          if (files.length >= maxFiles) {
            walkTruncated = true;
            return;
          }
          if (SKIP_DIRS.has(n)) continue;
          const childRel = rel === "." ? n : `${rel}/${n}`;
          const childAbs = join(abs, n);
          const st = lstatSync(fdPath(dirfd, n), { throwIfNoEntry: false });
          if (!st || st.isSymbolicLink()) continue;
          if (st.isFile() && ctx.guard.secretIds.has(st)) continue; // a secret under another name
          if (!admit(childRel, childAbs)) continue;
          if (st.isFile()) take(childRel, childAbs);
          else if (st.isDirectory() && depth < MAX_DEPTH) {
            let fd: number;
            try {
              fd = openSync(fdPath(dirfd, n), DIR_FLAGS);
            } catch {
              continue; // became a symlink (ELOOP) or vanished: not followed
            }
            try {
              await walk(fd, childAbs, childRel, depth + 1);
            } finally {
              closeSync(fd);
            }
          }
        }
      };
      const start = lstatSync(p.abs, { throwIfNoEntry: false });
      if (start?.isFile()) {
        const { fd } = openFileAt(p.root, p.rel, ctx.guard.secretIds);
        closeSync(fd);
        if (admit(p.rel, p.abs)) take(p.rel, p.abs);
      } else {
        const fd = openDirAt(p.root, components(p.rel), p.rel);
        try {
          await walk(fd, p.abs, p.rel, components(p.rel).length);
        } finally {
          closeSync(fd);
        }
      }
      // The worker opens each file by walking its components from this root fd, never by path string.
      const rootFd = openRoot(p.root);
      let r: RegexResult;
      try {
        r = await runRegex(
          { pattern: args.pattern, ignoreCase, maxMatches, files, rootFd, maxFileBytes: max_file_bytes },
          search_timeout_ms,
          ctx.signal,
        );
      } finally {
        closeSync(rootFd);
      }
      const out = r.hits.map((h) => `${h.rel}:${h.line}: ${h.text}`);
      if (out.length === 0) out.push(`no matches in ${r.filesScanned} files`);
      if (r.truncated) out.push(`[… stopped at ${maxMatches} matches; narrow the pattern or path]`);
      if (ruled)
        out.push(`[${ruled} files or directories were skipped: policy rules deny them or reserve them for review]`);
      if (walkTruncated) out.push(`[… only the first ${maxFiles} files were searched; give a narrower path]`);
      return { text: out.join("\n"), isError: false };
    }
  },
});
