import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { globToRegExp } from "../policy/glob.js";
import type { ToolDef } from "../tool-table.js";
import { checkPattern, runRegex } from "./regex-worker.js";

const SKIP_DIRS = new Set([".git", "node_modules"]);

export const searchFiles: ToolDef = {
  name: "search_files",
  description: "Search workspace files for a regex; returns path:line: text. Skips .git and node_modules.",
  parameters: {
    type: "object",
    properties: {
      pattern: { type: "string", description: "JavaScript regular expression" },
      path: { type: "string", description: "Directory or file; default the workspace root" },
      glob: { type: "string", description: "File name filter, e.g. *.ts" },
      ignore_case: { type: "boolean" },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
  risk: "read",
  core: true,
  kind: "builtin",
  origin: "builtin",
  plan(args: { pattern: string; path?: string; glob?: string; ignore_case?: boolean }, ctx) {
    const ignoreCase = args.ignore_case ?? false;
    checkPattern(args.pattern, ignoreCase);
    const p = ctx.guard.resolve(args.path ?? ".", { write: false });
    const nameRe = args.glob ? globToRegExp(args.glob) : undefined;
    const { search_max_files: maxFiles, search_max_matches: maxMatches, max_file_bytes, search_timeout_ms } = ctx.config.limits;
    return {
      paths: [p],
      async execute() {
        // The walk runs here, where the path rules live: no symlink is followed, no secret is read.
        const files: Array<{ rel: string; abs: string }> = [];
        let walkTruncated = false;
        const walk = (abs: string, rel: string) => {
          if (files.length >= maxFiles) return void (walkTruncated = true);
          const st = lstatSync(abs, { throwIfNoEntry: false });
          if (!st || st.isSymbolicLink()) return;
          if (ctx.guard.isSecret(rel, abs)) return;
          if (st.isFile()) {
            const name = rel.slice(rel.lastIndexOf("/") + 1);
            if (!nameRe || nameRe.test(name)) files.push({ rel, abs });
            return;
          }
          if (!st.isDirectory()) return;
          let names: string[];
          try {
            names = readdirSync(abs).sort();
          } catch {
            return;
          }
          for (const n of names) {
            if (SKIP_DIRS.has(n)) continue;
            walk(join(abs, n), rel === "." ? n : `${rel}/${n}`);
          }
        };
        walk(p.abs, p.rel);
        const r = await runRegex(
          { pattern: args.pattern, ignoreCase, maxMatches, files, maxFileBytes: max_file_bytes },
          search_timeout_ms,
          ctx.signal,
        );
        const out = r.hits.map((h) => `${h.rel}:${h.line}: ${h.text}`);
        if (out.length === 0) out.push(`no matches in ${r.filesScanned} files`);
        if (r.truncated) out.push(`[… stopped at ${maxMatches} matches; narrow the pattern or path]`);
        if (walkTruncated) out.push(`[… only the first ${maxFiles} files were searched; give a narrower path]`);
        return { text: out.join("\n"), isError: false };
      },
    };
  },
};
