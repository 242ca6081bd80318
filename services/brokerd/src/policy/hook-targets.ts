import { lstatSync, readdirSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { type ConfigFile, fileHead, gitConfigFiles, globalGitConfigs } from "./git-config-files.js";

/**
 * The workspace files the repository's own hooks run: a legitimate
 * `.git/hooks/pre-commit` that calls `tools/lint` makes an edit of `tools/lint`
 * as good as a new hook, so such files are reviewed like hooks are. Found by
 * content, conservatively: every token of a hook (and, transitively, of a file
 * it names) that looks like a path and names a place inside the workspace.
 * What git itself would look at: `.git/hooks/` (through a `.git` file's
 * `gitdir:` and a `commondir`) and `core.hooksPath`, which is reviewed whole,
 * wherever git reads it: the repository's config, a file that config includes,
 * the person's global config and its includes (git-config-files.ts).
 */
export interface HookTargets {
  /** A file a hook names, with the hook that names it (for the person's reason). */
  files: Map<string, string>;
  /** `core.hooksPath` when inside the workspace: a new file in it is a new hook. */
  dirs: Map<string, string>;
  /** Config files the repository's config includes, inside the workspace: git obeys them like .git/config. */
  configs: Map<string, string>;
}

/** Bounds of the reading: a hook is a short script, and this runs before every write and every command. */
const MAX_FILES = 64;
const MAX_DEPTH = 3;
const MANAGER_FILES = [
  ".pre-commit-config.yaml",
  "lefthook.yml",
  ".lefthook.yml",
  "lefthook-local.yml",
  ".overcommit.yml",
];

const within = (root: string, p: string) => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);

const real = (p: string): string => {
  try {
    return realpathSync.native(p);
  } catch {
    return p;
  }
};

/** The repository's common directory for a worktree root: `.git`, or where its `gitdir:` and `commondir` lead. */
function commonDirOf(root: string): string | undefined {
  const dot = join(root, ".git");
  let gitDir = dot;
  try {
    if (!lstatSync(dot).isDirectory()) {
      const m = /^\s*gitdir:\s*(.+?)\s*$/im.exec(fileHead(dot, 4096) ?? "");
      if (!m) return undefined;
      gitDir = resolve(root, m[1]!);
    }
  } catch {
    return undefined;
  }
  const common = fileHead(join(gitDir, "commondir"), 4096)?.trim();
  return common ? resolve(gitDir, common) : gitDir;
}

/**
 * Every `core.hooksPath` the config files set, unquoted. Not only the last: which
 * one wins depends on where each include sits and which `includeIf` holds, so
 * each is treated as the one git uses.
 */
function hooksPathsOf(configs: readonly string[]): string[] {
  const found: string[] = [];
  for (const config of configs) {
    let section = "";
    for (const line of config.split("\n")) {
      const sec = /^\s*\[\s*([^\]\s"]+)/.exec(line);
      if (sec) section = sec[1]!.toLowerCase();
      const kv = /^\s*(?:\[[^\]]*\]\s*)?hookspath\s*=\s*(.*?)\s*$/i.exec(line);
      if (kv && section === "core") found.push(kv[1]!.replace(/^"(.*)"$/, "$1"));
    }
  }
  return found;
}

/** Words of a script that look like paths: a bare `lint` is looked up on PATH, `./lint` or `lint.sh` is not. */
function pathTokens(text: string): string[] {
  const out = new Set<string>();
  for (const t of text.split(/[\s"'`;|&()<>=${}\\,]+/)) {
    if (t.length === 0 || t.length > 1024 || !/[./]/.test(t) || /^-/.test(t)) continue;
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(t)) continue;
    out.add(t);
  }
  return [...out];
}

/**
 * The hook targets of the repository whose work tree is `top`, kept to those
 * inside the workspace `root`. `globals`: the person's global and system
 * config files (their `core.hooksPath` is every repository's).
 */
export function hookTargets(
  top: string,
  root = top,
  globals: readonly ConfigFile[] = globalGitConfigs(process.env),
): HookTargets {
  const files = new Map<string, string>();
  const dirs = new Map<string, string>();
  const configs = new Map<string, string>();
  const common = commonDirOf(top);
  if (!common) return { files, dirs, configs };
  const home = process.env.HOME ?? homedir();
  // Hook managers' own directories hold what the hook git runs hands over to (husky's `_/h` finds
  // `.husky/pre-commit` by name, not by a path a token could show).
  const hookDirs = [join(common, "hooks"), join(top, ".husky"), join(top, ".githooks")];
  const own = gitConfigFiles([{ path: join(common, "config"), why: ".git/config" }], home);
  for (const [abs, why] of own.files) if (within(root, abs) && !within(common, abs)) configs.set(abs, why);
  for (const configured of hooksPathsOf([...gitConfigFiles(globals, home).texts, ...own.texts])) {
    const dir = configured.startsWith("~/") ? real(join(home, configured.slice(2))) : real(resolve(top, configured));
    if (configured.startsWith("~") && !configured.startsWith("~/")) continue;
    hookDirs.push(dir);
    if (within(root, dir) && dir !== root) dirs.set(dir, `core.hooksPath ${configured}`);
  }
  // Breadth-first from the hooks, each file read once.
  const queue: { path: string; by: string; depth: number }[] = [];
  for (const dir of hookDirs) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const n of names.sort()) {
      if (n.endsWith(".sample")) continue;
      const p = join(dir, n);
      queue.push({ path: p, by: within(root, p) ? relative(root, p) : p, depth: 0 });
    }
  }
  // Hook managers' configurations name the commands they run at a commit (`entry: tools/lint`, `run: ./x`).
  for (const n of MANAGER_FILES) {
    const p = join(top, n);
    if (exists(p)) queue.push({ path: p, by: relative(root, p) || n, depth: 0 });
  }
  const read = new Set<string>();
  while (queue.length > 0 && read.size < MAX_FILES) {
    const { path, by, depth } = queue.shift()!;
    const key = real(path);
    if (read.has(key)) continue;
    read.add(key);
    const text = fileHead(path);
    if (text === undefined) continue;
    for (const t of pathTokens(text)) {
      const bare = t.replace(/^\/+/, "");
      const candidates = new Set([resolve(top, bare), resolve(dirname(path), bare)]);
      if (isAbsolute(t)) candidates.add(resolve(t));
      for (const c of candidates) {
        const abs = real(c);
        if (!within(root, abs) || abs === root) continue;
        let isFile = false;
        try {
          isFile = statSync(abs).isFile();
        } catch {
          // Not there yet: a file a hook would run the moment it appears, if the token has a directory in it.
          if (!bare.includes("/")) continue;
        }
        if (!isFile && existsAsDir(abs)) continue;
        if (!files.has(abs)) files.set(abs, by);
        if (isFile && depth < MAX_DEPTH) queue.push({ path: abs, by, depth: depth + 1 });
      }
    }
  }
  return { files, dirs, configs };
}

function existsAsDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Why a write of `abs` is reviewed, if a hook runs it: the hooks of every
 * repository whose work tree holds `abs` (the root's, a nested clone's, a
 * submodule's), each found by its `.git`.
 */
export function hookReasonFor(root: string, abs: string): string | undefined {
  for (let top = dirname(abs); within(root, top); top = dirname(top)) {
    if (exists(join(top, ".git"))) {
      const why = hookReason(hookTargets(top, root), abs);
      if (why) return why;
    }
    if (top === root || dirname(top) === top) return undefined;
  }
  return undefined;
}

/**
 * Why git obeys `abs` as a config file, if a repository whose work tree holds
 * it (or the workspace root's) includes it from its config.
 */
function includedConfigFor(root: string, abs: string, globals?: readonly ConfigFile[]): string | undefined {
  const tops = new Set<string>([root]);
  for (let top = dirname(abs); within(root, top) && top !== root; top = dirname(top)) tops.add(top);
  for (const top of tops) {
    if (!exists(join(top, ".git"))) continue;
    const why = hookTargets(top, root, globals).configs.get(abs);
    if (why) return why;
  }
  return undefined;
}

function exists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/** The hook that runs `abs`, or the hooksPath it lies in: why a write of it is reviewed. */
export function hookReason(targets: HookTargets, abs: string): string | undefined {
  const f = targets.files.get(abs);
  if (f) return f;
  for (const [dir, why] of targets.dirs) if (within(dir, abs)) return why;
  return undefined;
}

/** Every config file the person's global git configs make git obey (they and their includes), each with why. */
export function globalConfigFiles(globals: readonly ConfigFile[] = globalGitConfigs(process.env)): Map<string, string> {
  return gitConfigFiles(globals, process.env.HOME ?? homedir()).files;
}

/**
 * Why git obeys a workspace file as its config: the person's global or system
 * config (from brokerd's environment, as git finds it: `GIT_CONFIG_GLOBAL`,
 * `$XDG_CONFIG_HOME/git/config`, `~/.gitconfig`) or a file one of them, or a
 * repository's config, includes.
 */
export function gitConfigReason(root: string, abs: string, lexical: string): string | undefined {
  const globals = globalGitConfigs(process.env);
  const files = globalConfigFiles(globals);
  return files.get(abs) ?? files.get(lexical) ?? includedConfigFor(root, abs, globals);
}
