import { existsSync, lstatSync, readdirSync, realpathSync, type Dirent } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { PathMatcher } from "./glob.js";
import { Refused } from "../errors.js";

export interface ResolvedPath {
  /** What the model asked for, for messages. */
  input: string;
  /** Canonical absolute path: every existing prefix resolved through symlinks. */
  abs: string;
  /** Relative to the workspace root that contains it (`.` for the root itself). */
  rel: string;
  root: string;
  exists: boolean;
}

/** realpath of the longest existing prefix, then the rest appended: works for files not yet created. */
export function canonicalize(p: string): string {
  let head = p;
  const rest: string[] = [];
  for (;;) {
    try {
      const real = realpathSync.native(head);
      return rest.length ? join(real, ...rest.reverse()) : real;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // A dangling symlink exists but has no realpath: refusing is the only safe answer.
      if (code === "ENOENT" && isDanglingLink(head)) {
        throw new Refused("path:dangling-symlink", `${head} is a symlink to something that does not exist`);
      }
      if (code !== "ENOENT" && code !== "ENOTDIR") throw err;
      const parent = dirname(head);
      if (parent === head) return p;
      rest.push(basename(head));
      head = parent;
    }
  }
}

function isDanglingLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

const within = (root: string, p: string) => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);

/**
 * The path checks every tool runs before touching the disk. Roots and protected
 * paths are canonicalized once, so a workspace under a symlinked /tmp still works.
 */
/** Longest path and deepest nesting accepted (also the bounds of fs-walk.ts). */
const MAX_INPUT_BYTES = 4096;
const MAX_INPUT_DEPTH = 128;
/** How many entries the walk for secrets to hide may visit before the command is refused. */
const SECRET_WALK_LIMIT = 200_000;

export class PathGuard {
  readonly roots: string[];
  private readonly protectedPaths: string[];
  private readonly secrets: PathMatcher;

  constructor(roots: readonly string[], protectedPaths: readonly string[], secretPatterns: readonly string[]) {
    this.roots = roots.map((r) => canonicalize(resolve(r)));
    this.protectedPaths = protectedPaths.map((p) => canonicalize(resolve(p)));
    // Case-insensitive: KEY.PEM and .ENV are the same secrets on every filesystem a person copies them to.
    this.secrets = new PathMatcher(secretPatterns, { ignoreCase: true });
  }

  /**
   * Resolves a path the model gave: relative paths are relative to the first
   * root. Refuses NUL bytes, anything outside the roots (before and after
   * symlink resolution) and secrets (by the name given and the name resolved).
   */
  resolve(input: string, opts: { write: boolean }): ResolvedPath {
    if (this.roots.length === 0) {
      throw new Refused("path:no-workspace", "no workspace is configured, so no path is accessible");
    }
    if (input.includes("\0")) throw new Refused("path:invalid", "the path contains a NUL byte");
    if (Buffer.byteLength(input) > MAX_INPUT_BYTES)
      throw new Refused("limit:path-length", `the path is longer than ${MAX_INPUT_BYTES} bytes`);
    if (input.split("/").length > MAX_INPUT_DEPTH + 1)
      throw new Refused("limit:path-depth", `the path has more than ${MAX_INPUT_DEPTH} components`);
    const lexical = isAbsolute(input) ? resolve(input) : resolve(this.roots[0]!, input);
    const lexRoot = this.roots.find((r) => within(r, lexical));
    if (!lexRoot) {
      throw new Refused(
        "path:outside-workspace",
        `${input} is outside the workspace (${this.roots.join(", ")}); use a path relative to the workspace`,
      );
    }
    const abs = canonicalize(lexical);
    const root = this.roots.find((r) => within(r, abs));
    if (!root) {
      throw new Refused("path:symlink-escape", `${input} resolves through a symlink to ${abs}, outside the workspace`);
    }
    const rel = relative(root, abs) || ".";
    const lexRel = relative(lexRoot, lexical) || ".";
    if (this.isSecret(rel, abs) || this.isSecret(lexRel, lexical)) {
      throw new Refused(
        "path:secret",
        `${input} looks like a secret (credentials or keys); it is never readable or writable`,
      );
    }
    if (opts.write && this.isProtected(abs)) {
      throw new Refused(
        "path:protected",
        `${input} is part of Boxmaker's own source, config or state; it is never writable`,
      );
    }
    return { input, abs, rel, root, exists: existsSync(abs) };
  }

  isSecret(rel: string, abs: string): boolean {
    return this.secrets.matches(rel, abs);
  }

  isProtected(abs: string): boolean {
    return this.protectedPaths.some((p) => within(p, abs));
  }

  /**
   * Secret files and directories inside the roots, for the sandbox to mask:
   * a command must not read what read_file may not, so node_modules/ and .git/
   * are walked too. Symlinks are not followed (a link to a secret outside is
   * outside the sandbox anyway). Fails closed: past `limit` entries it throws
   * a Refused instead of returning a partial list.
   */
  secretsInside(limit = SECRET_WALK_LIMIT): { path: string; dir: boolean }[] {
    const found: { path: string; dir: boolean }[] = [];
    let seen = 0;
    const walk = (root: string, dir: string, depth: number) => {
      let entries: Dirent[];
      try {
        entries = readdirSync(dir, { withFileTypes: true });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "ENOENT" || code === "ENOTDIR") return; // vanished meanwhile
        throw new Refused(
          "sandbox:secrets-unknown",
          `cannot list ${dir} (${code}) to hide the secrets in it, so no command runs`,
        );
      }
      seen += entries.length;
      if (seen > limit) {
        throw new Refused(
          "limit:secret-scan",
          `the workspace has more than ${limit} entries, too many to find every secret file to hide from commands; no command runs (remove generated trees or narrow workspace_roots)`,
        );
      }
      for (const e of entries) {
        const abs = join(dir, e.name);
        if (e.isSymbolicLink()) continue;
        if (this.isSecret(relative(root, abs), abs)) {
          if (e.isDirectory() || e.isFile()) found.push({ path: abs, dir: e.isDirectory() });
          continue;
        }
        if (e.isDirectory()) {
          if (depth >= 4 * MAX_INPUT_DEPTH)
            throw new Refused("limit:secret-scan", `${abs} is nested too deep to scan for secrets; no command runs`);
          walk(root, abs, depth + 1);
        }
      }
    };
    for (const r of this.roots) walk(r, r, 0);
    return found;
  }

  /** Protected paths inside a root: the sandbox binds them read-only over the writable workspace. */
  protectedInside(root: string): string[] {
    return this.protectedPaths.filter((p) => p !== root && within(root, p));
  }
}
