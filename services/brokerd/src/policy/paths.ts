import { closeSync, constants, existsSync, fstatSync, openSync, readSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { canonicalize, within } from "./canonical-path.js";
import { gitShapeOfWrite, gitShapePieces } from "./git-shape.js";
import { PathMatcher } from "./glob.js";
import { gitConfigReason, globalConfigFiles, hookReason, hookReasonFor, type HookTargets } from "./hook-targets.js";
import { MAX_INPUT_BYTES, MAX_INPUT_DEPTH } from "./path-limits.js";
import { DEFAULT_PROTECTED_PATTERNS, DEFAULT_REVIEWED_PATTERNS } from "./protected-paths.js";
import { type FileIdentity, identityOf, SecretIdentities } from "./secret-identity.js";
import { SECRET_WALK_LIMIT, scanWorkspace, type WorkspaceScan } from "./workspace-scan.js";
import { Refused } from "../errors.js";
import { NAMED_VALUE_MAX_BYTES } from "../secrets/named-value.js";

// Resolving a path is its own module; the tests of PathGuard import it from here.
export { canonicalize } from "./canonical-path.js";

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

/** A path a run planted; `gitShaped` names the directory it gave git's shape to. */
export interface Planted {
  path: string;
  gitShaped?: string;
}

/**
 * The path checks every tool runs before touching the disk. Roots and protected
 * paths are canonicalized once, so a workspace under a symlinked /tmp still works.
 */
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
    const config = gitConfigReason(root, abs, lexical);
    if (config) {
      throw new Refused(
        "path:git-config",
        `${input} is a config file git obeys (${config}): it can set core.hooksPath or core.fsmonitor, which git runs at the person's next commit or status, as good as .git/hooks, so the model never writes it`,
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

  /**
   * Whether a workspace path is in either protected tier, a file the repository's hooks run or a config
   * file git obeys (`gitConfigs`: the global ones and their includes, found once per walk).
   */
  isWorkspaceProtected(
    rel: string,
    abs: string,
    hooks: readonly HookTargets[] = [],
    gitConfigs: ReadonlyMap<string, string> = new Map(),
  ): boolean {
    return (
      this.protectedGlobs.matches(rel, abs) ||
      this.reviewedGlobs.matches(rel, abs) ||
      gitConfigs.has(abs) ||
      hooks.some((h) => hookReason(h, abs) !== undefined || h.configs.has(abs))
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
    const id = identityOf(abs);
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
      const now = identityOf(abs);
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
   * One walk of the roots for the sandbox (workspace-scan.ts): what to mask,
   * bind read-only and pin, with each secret's identity kept for the file tools.
   */
  scan(limit = SECRET_WALK_LIMIT): WorkspaceScan {
    const gitConfigs = globalConfigFiles();
    return scanWorkspace(this.roots, limit, {
      isSecret: (rel, abs) => this.isSecret(rel, abs),
      isProtected: (rel, abs, hooks) => this.isWorkspaceProtected(rel, abs, hooks, gitConfigs),
      holdsSecret: (name, rel, abs) => {
        if (!this.holdsSecret(name, rel, abs)) return false;
        this.rememberSecretFile(abs);
        return true;
      },
      foundSecrets: (ids) => this.secretIds.add(ids),
      contentSecretsNow: () => this.contentSecretsNow(),
    });
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
    const id = identityOf(abs);
    if (id.ino >= 0) this.writtenByTools.set(abs, id.ino);
    if (this.writtenByTools.size > 10_000) this.writtenByTools.delete(this.writtenByTools.keys().next().value!);
  }

  /** Protected paths inside a root: the sandbox binds them read-only over the writable workspace. */
  protectedInside(root: string): string[] {
    return this.protectedPaths.filter((p) => p !== root && within(root, p));
  }
}
