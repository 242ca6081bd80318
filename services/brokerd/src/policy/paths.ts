import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  openSync,
  readSync,
  readdirSync,
  realpathSync,
  type Dirent,
} from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { gitShapeOfWrite, gitShapePieces, isGitShaped } from "./git-shape.js";
import { PathMatcher } from "./glob.js";
import { hookReason, hookReasonFor, hookTargets, type HookTargets } from "./hook-targets.js";
import { DEFAULT_PROTECTED_PATTERNS, DEFAULT_REVIEWED_PATTERNS } from "./protected-paths.js";
import { type FileIdentity, SecretIdentities } from "./secret-identity.js";
import { Refused } from "../errors.js";
import { NAMED_VALUE_MAX_BYTES } from "../secrets/named-value.js";

export interface ResolvedPath {
  /** What the model asked for, for messages. */
  input: string;
  /** Canonical absolute path: every existing prefix resolved through symlinks. */
  abs: string;
  /** Relative to the workspace root that contains it (`.` for the root itself). */
  rel: string;
  root: string;
  exists: boolean;
  /** A write to a path only a person may approve: the protected-path glob it matched. */
  reviewed?: string;
}

/** Workspace globs beyond the secrets: what the model never writes, and what it writes only with approval. */
export interface WorkspaceProtection {
  protected: readonly string[];
  reviewed: readonly string[];
}

const DEFAULT_PROTECTION: WorkspaceProtection = {
  protected: DEFAULT_PROTECTED_PATTERNS,
  reviewed: DEFAULT_REVIEWED_PATTERNS,
};

/** What the sandbox must do to the workspace for one run, found by one walk. */
export interface WorkspaceScan {
  /** Secrets, masked: files by /dev/null, directories by an empty tmpfs. */
  hidden: { path: string; dir: boolean }[];
  /** Each hidden path's file identity ("dev:ino") at the walk: a secret replaced under a mask is a new one. */
  hiddenIds: Map<string, string>;
  /** Protected and reviewed paths that exist, bound read-only over the writable workspace. */
  readOnly: string[];
  /**
   * Every directory between a root and a hidden or read-only path, bound onto
   * itself: a mount point cannot be renamed (EBUSY), so `mv .aws awsx` or
   * `mv .git .gitx` fails instead of moving a secret or git's config out from
   * under its name.
   */
  pinned: string[];
  /** Each protected or reviewed path found (symlinks too) with its inode, to see what a run planted. */
  protectedIds: Map<string, number>;
  /** Directories protected for having git's shape, whatever they are called. */
  gitShaped: Set<string>;
}

/** A path a run planted; `gitShaped` names the directory it gave git's shape to. */
export interface Planted {
  path: string;
  gitShaped?: string;
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
      if (code === "ELOOP")
        throw new Refused("path:symlink-loop", `${head} is a loop of symlinks; it names nothing that can be used`);
      if (code === "ENAMETOOLONG")
        throw new Refused(
          "path:invalid",
          `a component of ${basename(head).slice(0, 80)}… is longer than a file name may be`,
        );
      if (code === "EACCES" || code === "EPERM")
        throw new Refused("path:inaccessible", `${head} cannot be resolved (${code}): brokerd may not look inside it`);
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
  private readonly protectedGlobs: PathMatcher;
  private readonly reviewedGlobs: PathMatcher;
  /** Secrets by what they are, not what they are called: a rename or a hard link keeps them secret. */
  readonly secretIds = new SecretIdentities();
  /**
   * Files found holding a secret by content (secrets/), where each was found: a
   * command's sandbox masks them as it masks a named secret, while they are
   * still that file. Bounded like the identities.
   */
  private readonly contentSecrets = new Map<string, FileIdentity>();
  /** Protected files brokerd's own tools wrote, with the inode each write left. */
  private readonly writtenByTools = new Map<string, number>();

  constructor(
    roots: readonly string[],
    protectedPaths: readonly string[],
    secretPatterns: readonly string[],
    protection: WorkspaceProtection = DEFAULT_PROTECTION,
  ) {
    this.roots = roots.map((r) => canonicalize(resolve(r)));
    this.protectedPaths = protectedPaths.map((p) => canonicalize(resolve(p)));
    // Case-insensitive: KEY.PEM and .ENV are the same secrets on every filesystem a person copies them to,
    // and .GIT/hooks is git's on a case-insensitive one.
    this.secrets = new PathMatcher(secretPatterns, { ignoreCase: true });
    this.protectedGlobs = new PathMatcher(protection.protected, { ignoreCase: true });
    this.reviewedGlobs = new PathMatcher(protection.reviewed, { ignoreCase: true });
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
    const reviewed = opts.write ? this.writeProtection(rel, abs, lexRel, lexical, input, root) : undefined;
    return { input, abs, rel, root, exists: existsSync(abs), ...(reviewed ? { reviewed } : {}) };
  }

  /** Refuses a write git or a shell would later run; names the glob when a person must review it. */
  private writeProtection(rel: string, abs: string, lexRel: string, lexical: string, input: string, root: string) {
    const never = this.protectedGlobs.firstMatch(rel, abs) ?? this.protectedGlobs.firstMatch(lexRel, lexical);
    if (never) {
      throw new Refused(
        "path:protected",
        `${input} matches the protected path ${never}: a program outside the sandbox (git, a shell, an editor) runs or obeys it, so the model never writes it`,
      );
    }
    const shape = gitShapeOfWrite(root, abs);
    if (shape) {
      const dir = `${relative(root, shape.dir) || "."}/`;
      throw new Refused(
        "path:git-shape",
        shape.already
          ? `${input} is inside ${dir}, which has git's shape (HEAD, objects/, refs/): git would take it for a repository and run hooks from it, so the model never writes in it`
          : `${input} would make ${dir} a git repository git would run hooks from (HEAD, objects/ and refs/ together), so the model never writes it`,
      );
    }
    return (
      this.reviewedGlobs.firstMatch(rel, abs) ??
      this.reviewedGlobs.firstMatch(lexRel, lexical) ??
      hookReasonFor(root, abs)
    );
  }

  /** Whether a workspace path is in either protected tier, or a file the repository's hooks run. */
  isWorkspaceProtected(rel: string, abs: string, hooks: readonly HookTargets[] = []): boolean {
    return (
      this.protectedGlobs.matches(rel, abs) ||
      this.reviewedGlobs.matches(rel, abs) ||
      hooks.some((h) => hookReason(h, abs) !== undefined)
    );
  }

  isSecret(rel: string, abs: string): boolean {
    return this.secrets.matches(rel, abs);
  }

  isProtected(abs: string): boolean {
    return this.protectedPaths.some((p) => within(p, abs));
  }

  /**
   * Which files named like a secret the walk reads to decide by their content
   * (secrets/named-value.ts), and how it decides: ResultSecrets registers
   * itself, so the walk and the results judge a file the same way.
   */
  private byContent?: { wants(name: string): boolean; holds(rel: string, abs: string, text: string): boolean };

  recogniseByContent(judge: NonNullable<PathGuard["byContent"]>): void {
    this.byContent = judge;
  }

  /** A small regular file the content judge wants and finds holding a secret (never a FIFO: O_NONBLOCK). */
  private holdsSecret(name: string, rel: string, abs: string): boolean {
    if (!this.byContent?.wants(name)) return false;
    let fd: number | undefined;
    try {
      fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      const st = fstatSync(fd);
      if (!st.isFile() || st.size > NAMED_VALUE_MAX_BYTES) return false;
      const buf = Buffer.alloc(st.size);
      const n = readSync(fd, buf, 0, st.size, 0);
      return this.byContent.holds(rel, abs, buf.subarray(0, n).toString("utf8"));
    } catch {
      return false; // vanished or unreadable: brokerd cannot read it, and neither can the sandbox
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** A file found holding a secret: refused to file tools by identity, masked from commands at its path. */
  rememberSecretFile(abs: string): void {
    const id = idOf(abs);
    if (id.ino < 0) return;
    this.secretIds.add([id]);
    this.contentSecrets.delete(abs);
    this.contentSecrets.set(abs, id);
    if (this.contentSecrets.size > 10_000) this.contentSecrets.delete(this.contentSecrets.keys().next().value!);
  }

  /** The remembered files still at their path and still the same file; the rest are forgotten here. */
  private contentSecretsNow(): string[] {
    const out: string[] = [];
    for (const [abs, id] of this.contentSecrets) {
      const now = idOf(abs);
      if (now.ino >= 0 && now.dev === id.dev && now.ino === id.ino && this.secretIds.has(now)) out.push(abs);
      else this.contentSecrets.delete(abs);
    }
    return out;
  }

  /** Secret files and directories inside the roots (the walk of `scan`). */
  secretsInside(limit = SECRET_WALK_LIMIT): { path: string; dir: boolean }[] {
    return this.scan(limit).hidden;
  }

  /**
   * One walk of the roots for the sandbox: the secrets to mask (a command must
   * not read what read_file may not, so node_modules/ and .git/ are walked
   * too), the protected paths to bind read-only, the directories to pin, and
   * each secret's identity for the file tools. Symlinks are not followed (a
   * link to a secret outside is outside the sandbox anyway). Fails closed: past
   * `limit` entries, or on a directory it cannot list, it throws a Refused
   * instead of returning a partial view.
   */
  scan(limit = SECRET_WALK_LIMIT): WorkspaceScan {
    const hidden: WorkspaceScan["hidden"] = [];
    const hiddenIds: WorkspaceScan["hiddenIds"] = new Map();
    const readOnly: string[] = [];
    const protectedIds = new Map<string, number>();
    const gitShaped = new Set<string>();
    const identities: FileIdentity[] = [];
    let seen = 0;
    const walk = (
      root: string,
      dir: string,
      depth: number,
      aboveReadOnly: boolean,
      underSecret: boolean,
      outerHooks: readonly HookTargets[],
    ) => {
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
      // A directory git would take for a repository is protected whole, whatever it is called.
      const shaped = !aboveReadOnly && !underSecret && dir !== root && isGitShaped(entries.map((e) => e.name));
      if (shaped) {
        protectedIds.set(dir, idOf(dir).ino);
        readOnly.push(dir);
        gitShaped.add(dir);
      }
      const underReadOnly = aboveReadOnly || shaped;
      // A repository here (the root's, a nested clone's, a submodule's) adds the files its hooks run, below it.
      const hooks =
        !underReadOnly && !underSecret && entries.some((e) => e.name === ".git")
          ? [...outerHooks, hookTargets(dir, root)]
          : outerHooks;
      for (const e of entries) {
        const abs = join(dir, e.name);
        const rel = relative(root, abs);
        if (underSecret) {
          // Inside a secret directory: every file in it is a secret by identity too.
          if (e.isFile()) identities.push(idOf(abs));
          else if (e.isDirectory() && depth < 4 * MAX_INPUT_DEPTH) walk(root, abs, depth + 1, true, true, []);
          continue;
        }
        const isProtected = !underReadOnly && this.isWorkspaceProtected(rel, abs, hooks);
        if (isProtected) {
          protectedIds.set(abs, idOf(abs).ino);
          if (e.isDirectory() || e.isFile()) readOnly.push(abs);
        }
        if (e.isSymbolicLink()) continue;
        if (e.isFile() && !this.isSecret(rel, abs) && this.holdsSecret(e.name, rel, abs)) this.rememberSecretFile(abs);
        if (this.isSecret(rel, abs)) {
          if (e.isDirectory() || e.isFile()) {
            const id = idOf(abs);
            hidden.push({ path: abs, dir: e.isDirectory() });
            hiddenIds.set(abs, `${id.dev}:${id.ino}`);
            if (e.isFile()) identities.push(id);
          }
          if (e.isDirectory()) walk(root, abs, depth + 1, true, true, []);
          continue;
        }
        if (e.isDirectory()) {
          if (depth >= 4 * MAX_INPUT_DEPTH)
            throw new Refused("limit:secret-scan", `${abs} is nested too deep to scan for secrets; no command runs`);
          walk(root, abs, depth + 1, underReadOnly || isProtected, false, hooks);
        }
      }
    };
    for (const r of this.roots) walk(r, r, 0, false, false, []);
    this.secretIds.add(identities);
    for (const abs of this.contentSecretsNow())
      if (!hidden.some((h) => h.path === abs || (h.dir && within(h.path, abs)))) hidden.push({ path: abs, dir: false });
    const pinned = new Set<string>();
    const inReadOnly = (d: string) => readOnly.some((ro) => d !== ro && within(ro, d));
    for (const p of [...hidden.map((h) => h.path), ...readOnly]) {
      const root = this.roots.find((r) => within(r, p));
      if (!root) continue;
      for (let d = dirname(p); d !== root && within(root, d); d = dirname(d)) {
        if (!inReadOnly(d)) pinned.add(d);
      }
    }
    const byDepth = (a: string, b: string) => a.split(sep).length - b.split(sep).length || a.localeCompare(b);
    return {
      hidden,
      hiddenIds,
      readOnly: readOnly.sort(byDepth),
      pinned: [...pinned].sort(byDepth),
      protectedIds,
      gitShaped,
    };
  }

  /**
   * The protected paths a run created or replaced, by comparing a walk after it
   * with the one before: what a command (or an MCP server) planted for git or a
   * shell to run later, outside the sandbox.
   */
  plantedSince(before: WorkspaceScan, after: WorkspaceScan = this.scan()): Planted[] {
    const planted: Planted[] = [];
    for (const [p, ino] of after.protectedIds) {
      if (before.protectedIds.get(p) === ino || this.writtenByTools.get(p) === ino) continue;
      if (planted.some((q) => within(q.path, p))) continue;
      if (!after.gitShaped.has(p)) planted.push({ path: p });
      else for (const piece of gitShapePieces(p)) planted.push({ path: piece, gitShaped: p });
    }
    return planted;
  }

  /**
   * A file brokerd's own file tools wrote (a person approved it, or a rule
   * allowed it): not something a command planted, even when the write landed
   * while a command was running.
   */
  wroteFile(abs: string): void {
    const id = idOf(abs);
    if (id.ino >= 0) this.writtenByTools.set(abs, id.ino);
    if (this.writtenByTools.size > 10_000) this.writtenByTools.delete(this.writtenByTools.keys().next().value!);
  }

  /** Protected paths inside a root: the sandbox binds them read-only over the writable workspace. */
  protectedInside(root: string): string[] {
    return this.protectedPaths.filter((p) => p !== root && within(root, p));
  }
}

function idOf(abs: string): FileIdentity {
  try {
    const st = lstatSync(abs);
    return { dev: st.dev, ino: st.ino, birthtimeMs: st.birthtimeMs };
  } catch {
    return { dev: -1, ino: -1, birthtimeMs: 0 };
  }
}
