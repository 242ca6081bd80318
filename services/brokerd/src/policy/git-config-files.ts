import { closeSync, openSync, readSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";

/**
 * The config files git obeys besides a repository's own `.git/config`: the
 * person's global one (`GIT_CONFIG_GLOBAL`, else `$XDG_CONFIG_HOME/git/config`
 * and `~/.gitconfig`), the system one, and every file an `include.path` or an
 * `includeIf.<cond>.path` in any of them (or in a repository's config) names.
 * A config git reads sets `core.hooksPath` and `core.fsmonitor`, so such a
 * file inside the workspace is as good as `.git/hooks`: the model never writes
 * it. Named targets count whether they exist or not (git skips a missing
 * include; the model creating it is the attack), and every `includeIf`
 * counts whatever its condition, which is the person's to meet later.
 */

/** git's own limit on nested includes (config.c MAX_INCLUDE_DEPTH). */
const MAX_INCLUDE_DEPTH = 10;
const MAX_FILES = 64;
const MAX_FILE_BYTES = 64 * 1024;

export interface ConfigFile {
  path: string;
  /** Why git reads it, for the refusal: "the global git config", "include.path in …". */
  why: string;
}

/** The person's global and system config files, as git finds them from its environment. */
export function globalGitConfigs(env: NodeJS.ProcessEnv, home = env.HOME ?? homedir()): ConfigFile[] {
  const out: ConfigFile[] = [];
  if (env.GIT_CONFIG_GLOBAL) out.push({ path: resolve(env.GIT_CONFIG_GLOBAL), why: "GIT_CONFIG_GLOBAL" });
  else {
    const xdg = env.XDG_CONFIG_HOME ? resolve(env.XDG_CONFIG_HOME) : join(home, ".config");
    out.push({ path: join(xdg, "git", "config"), why: "the global git config ($XDG_CONFIG_HOME/git/config)" });
    out.push({ path: join(home, ".gitconfig"), why: "the global git config (~/.gitconfig)" });
  }
  if (env.GIT_CONFIG_SYSTEM) out.push({ path: resolve(env.GIT_CONFIG_SYSTEM), why: "GIT_CONFIG_SYSTEM" });
  else out.push({ path: "/etc/gitconfig", why: "the system git config" });
  return out;
}

/**
 * The `path` values of a config's `[include]` and `[includeIf "…"]` sections,
 * in order, unquoted. Section and key names are case-insensitive; `[include]
 * path = x` on one line is a section header and a key at once.
 */
export function includePaths(text: string): string[] {
  const out: string[] = [];
  let including = false;
  for (const line of text.split("\n")) {
    const sec = /^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"(?:[^"\\]|\\.)*")?\s*\]/.exec(line);
    let rest = line;
    if (sec) {
      const name = sec[1]!.toLowerCase();
      including = name === "include" || name === "includeif";
      rest = line.slice(sec[0].length);
    }
    const kv = /^\s*path\s*=\s*(.*?)\s*$/i.exec(rest);
    if (kv && including) out.push(unquote(kv[1]!));
  }
  return out;
}

/** `"a b"` → `a b`, a trailing `# comment` or `; comment` off an unquoted value. */
function unquote(v: string): string {
  if (v.startsWith('"')) {
    const end = v.indexOf('"', 1);
    return v.slice(1, end < 0 ? undefined : end).replace(/\\(.)/g, "$1");
  }
  return v.replace(/\s*[#;].*$/, "");
}

/** An include's target as git resolves it: `~/` from home, relative to the including file's directory. */
export function includeTarget(value: string, from: string, home: string): string | undefined {
  if (!value) return undefined;
  if (value === "~" || value.startsWith("~/")) return join(home, value.slice(2));
  if (value.startsWith("~")) return undefined; // ~user: another person's home, not this workspace
  return isAbsolute(value) ? resolve(value) : resolve(dirname(from), value);
}

/** The first `max` bytes of a regular file as text; undefined for anything else or an unreadable one. */
export function fileHead(p: string, max = MAX_FILE_BYTES): string | undefined {
  let fd: number | undefined;
  try {
    if (!statSync(p).isFile()) return undefined;
    fd = openSync(p, "r");
    const buf = Buffer.alloc(max);
    const n = readSync(fd, buf, 0, max, 0);
    return buf.subarray(0, n).toString("utf8");
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

const real = (p: string): string => {
  try {
    return realpathSync.native(p);
  } catch {
    // Not there (yet): the deepest existing parent resolved, so a symlinked /tmp still compares.
    const parent = dirname(p);
    return parent === p ? p : join(real(parent), p.slice(parent.length + 1));
  }
};

/**
 * `starts` and every file their includes name, transitively (git's depth, a
 * bound on files): each canonical path with why git reads it, in the order
 * found, and the text of those that exist (for `core.hooksPath`, whose last
 * setting wins across them).
 */
export function gitConfigFiles(
  starts: readonly ConfigFile[],
  home: string,
): { files: Map<string, string>; texts: string[] } {
  const files = new Map<string, string>();
  const texts: string[] = [];
  const visit = (f: ConfigFile, depth: number) => {
    const abs = real(f.path);
    if (files.has(abs) || files.size >= MAX_FILES) return;
    files.set(abs, f.why);
    const text = fileHead(abs);
    if (text === undefined) return;
    texts.push(text);
    if (depth >= MAX_INCLUDE_DEPTH) return;
    for (const v of includePaths(text)) {
      const target = includeTarget(v, abs, home);
      if (target) visit({ path: target, why: `include.path ${v} in ${f.path}` }, depth + 1);
    }
  };
  for (const s of starts) visit(s, 0);
  return { files, texts };
}
