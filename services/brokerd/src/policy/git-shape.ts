import { readdirSync } from "node:fs";
import { dirname, relative, sep } from "node:path";

/**
 * Whether a directory's entries make it a repository to git: its discovery
 * (is_git_directory in setup.c) takes any directory holding `HEAD` and
 * `objects/` and `refs/` (or a `commondir` standing for the last two), and then
 * obeys that directory's config — fsmonitor, hooks, hooksPath — at the person's
 * next `git status` in it. Names only, any file type, any case: a symlink counts
 * as git follows it, and a case-insensitive filesystem takes `head` for `HEAD`.
 */
export function isGitShaped(names: Iterable<string>): boolean {
  const have = new Set<string>();
  for (const n of names) have.add(n.toLowerCase());
  return have.has("head") && ((have.has("objects") && have.has("refs")) || have.has("commondir"));
}

function entriesOf(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * The directory, from `abs`'s parent up to `root`, that a write of `abs` would
 * land in when it already has git's shape, or would give it that shape: the
 * piece the write adds is the first component of `abs` below each directory, so
 * the refusal does not depend on the order the pieces were written in.
 */
export function gitShapeOfWrite(root: string, abs: string): { dir: string; already: boolean } | undefined {
  for (let dir = dirname(abs); ; dir = dirname(dir)) {
    const rel = relative(dir, abs);
    if (rel.startsWith("..") || rel === "") return undefined;
    const names = entriesOf(dir);
    if (isGitShaped(names)) return { dir, already: true };
    if (isGitShaped([...names, rel.split(sep)[0]!])) return { dir, already: false };
    if (dir === root || dirname(dir) === dir) return undefined;
  }
}

/** Content git reads as a pointer to a repository elsewhere, were the file named `.git`. */
export const pointsAtGitDir = (content: string): boolean => /^\s*gitdir:/i.test(content);

/** What git makes in a repository's directory: a directory of only these is a repository and nothing else. */
const GIT_DIR_NAMES = new Set(
  [
    "HEAD",
    "objects",
    "refs",
    "config",
    "hooks",
    "info",
    "description",
    "branches",
    "logs",
    "packed-refs",
    "index",
    "commondir",
    "FETCH_HEAD",
    "ORIG_HEAD",
    "MERGE_HEAD",
    "COMMIT_EDITMSG",
    "worktrees",
    "modules",
    "shallow",
    "gitdir",
    "lfs",
    "rr-cache",
    "sequencer",
    "rebase-merge",
    "rebase-apply",
  ].map((n) => n.toLowerCase()),
);

/**
 * What to take away from a directory a run gave git's shape: all of it when it
 * holds nothing but git's own files (a `git init --bare`), else only the pieces
 * git needs to call it a repository (`HEAD`, `commondir`), so that the person's
 * files beside them (a `src/` that gained a HEAD and a refs/) stay where they are.
 */
export function gitShapePieces(dir: string): string[] {
  const names = entriesOf(dir);
  if (names.every((n) => GIT_DIR_NAMES.has(n.toLowerCase()))) return [dir];
  return names
    .filter((n) => n.toLowerCase() === "head" || n.toLowerCase() === "commondir")
    .map((n) => `${dir}${sep}${n}`);
}
