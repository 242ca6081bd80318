import { closeSync, existsSync, openSync, readdirSync, readSync, realpathSync, statSync, type Dirent } from "node:fs";
import { dirname, isAbsolute, join, relative } from "node:path";

/** What decides whether a directory may be bound whole. */
export interface BindRules {
  /** Why binding the path would expose the stack (it contains or lies in the runtime or state directory). */
  exposes(path: string): string | undefined;
  /** Whether an entry is a secret; `rel` is relative to the directory being considered. */
  isSecret(rel: string, abs: string): boolean;
}

/** Past this many entries a package directory is not bound whole: it could not be checked for secrets. */
const PACKAGE_WALK_LIMIT = 20_000;

/** Whether `dir` holds a secret anywhere below it; a tree too big or unreadable to tell counts as holding one. */
function holdsSecret(dir: string, isSecret: BindRules["isSecret"]): boolean {
  let seen = 0;
  const walk = (d: string): boolean => {
    let entries: Dirent[];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return true;
    }
    seen += entries.length;
    if (seen > PACKAGE_WALK_LIMIT) return true;
    for (const e of entries) {
      const abs = join(d, e.name);
      if (isSecret(relative(dir, abs), abs)) return true;
      if (e.isDirectory() && walk(abs)) return true;
    }
    return false;
  };
  return walk(dir);
}

/** The nearest directory at or above `dir` with a package.json: the package a program file belongs to. */
function packageOf(dir: string): string | undefined {
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(join(d, "package.json"))) return d;
    if (dirname(d) === d) return undefined;
  }
}

/** Whether a file is a script (`#!`), which brings its package, rather than a binary, which brings only its directory. */
function isScript(file: string): boolean {
  const head = Buffer.alloc(2);
  let fd: number | undefined;
  try {
    fd = openSync(file, "r");
    return readSync(fd, head, 0, 2, 0) === 2 && head.toString("latin1") === "#!";
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * What a stdio server's own program needs to read in the sandbox, and no
 * more: for each absolute file on its command line, the package it lives in
 * (its code imports its own files) when that directory holds neither the
 * stack nor a secret, else the file alone with its package.json (so Node
 * still sees the module type); for a command that is a binary, its own
 * directory on the same terms (node's bin) or else the binary alone; and
 * every node_modules up the tree from a script (its dependencies) that does
 * not hold the stack. A script in /tmp or $HOME therefore never brings
 * /tmp (the runtime directory) or ~/.ssh with it. Directories on the command
 * line are data, not program: a server's data is bound by `ro_paths`.
 */
export function programPaths(argv: readonly string[], rules: BindRules): string[] {
  const out = new Set<string>();
  const wholeOk = (d: string) => !rules.exposes(d) && !holdsSecret(d, rules.isSecret);
  argv.forEach((a, i) => {
    if (!isAbsolute(a)) return;
    let real: string;
    try {
      real = realpathSync(a);
    } catch {
      return;
    }
    if (!statSync(real, { throwIfNoEntry: false })?.isFile()) return;
    if (i === 0 && !isScript(real)) {
      out.add(wholeOk(dirname(real)) ? dirname(real) : real);
      return;
    }
    const pkg = packageOf(dirname(real));
    if (pkg && wholeOk(pkg)) out.add(pkg);
    else {
      out.add(real);
      if (pkg) out.add(join(pkg, "package.json"));
    }
    // Node resolves packages through every node_modules up the tree.
    for (let d = dirname(real); ; d = dirname(d)) {
      const nm = join(d, "node_modules");
      if (existsSync(nm) && !rules.exposes(nm)) out.add(nm);
      if (dirname(d) === d) break;
    }
  });
  return [...out];
}
