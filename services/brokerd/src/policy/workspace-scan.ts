import { type Dirent, readdirSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { Refused } from "../errors.js";
import { within } from "./canonical-path.js";
import { isGitShaped } from "./git-shape.js";
import { type HookTargets, hookTargets } from "./hook-targets.js";
import { MAX_INPUT_DEPTH } from "./path-limits.js";
import { type FileIdentity, identityOf } from "./secret-identity.js";

/** How many entries the walk for secrets to hide may visit before the command is refused. */
export const SECRET_WALK_LIMIT = 200_000;

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

/** What the walk asks of the path policy (PathGuard) about each entry, and what it tells it. */
export interface ScanJudge {
  isSecret(rel: string, abs: string): boolean;
  /** In either protected tier, or a file one of `hooks`' repositories runs. */
  isProtected(rel: string, abs: string, hooks: readonly HookTargets[]): boolean;
  /** A file not named like a secret: whether its content holds one (the policy then remembers it). */
  holdsSecret(name: string, rel: string, abs: string): boolean;
  /** The identities of every secret file the walk found, for the file tools. */
  foundSecrets(ids: readonly FileIdentity[]): void;
  /** Files found holding a secret earlier that are still that file at that path: masked too. */
  contentSecretsNow(): string[];
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
export function scanWorkspace(roots: readonly string[], limit: number, judge: ScanJudge): WorkspaceScan {
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
      protectedIds.set(dir, identityOf(dir).ino);
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
        if (e.isFile()) identities.push(identityOf(abs));
        else if (e.isDirectory() && depth < 4 * MAX_INPUT_DEPTH) walk(root, abs, depth + 1, true, true, []);
        continue;
      }
      const isProtected = !underReadOnly && judge.isProtected(rel, abs, hooks);
      if (isProtected) {
        protectedIds.set(abs, identityOf(abs).ino);
        if (e.isDirectory() || e.isFile()) readOnly.push(abs);
      }
      if (e.isSymbolicLink()) continue;
      if (e.isFile() && !judge.isSecret(rel, abs)) judge.holdsSecret(e.name, rel, abs);
      if (judge.isSecret(rel, abs)) {
        if (e.isDirectory() || e.isFile()) {
          const id = identityOf(abs);
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
  for (const r of roots) walk(r, r, 0, false, false, []);
  judge.foundSecrets(identities);
  for (const abs of judge.contentSecretsNow())
    if (!hidden.some((h) => h.path === abs || (h.dir && within(h.path, abs)))) hidden.push({ path: abs, dir: false });
  const pinned = new Set<string>();
  const inReadOnly = (d: string) => readOnly.some((ro) => d !== ro && within(ro, d));
  for (const p of [...hidden.map((h) => h.path), ...readOnly]) {
    const root = roots.find((r) => within(r, p));
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
