import { closeSync, type Dirent, fstatSync, openSync, readdirSync, readSync, constants as fs } from "node:fs";
import { join } from "node:path";
import { valuesInSecretText } from "./secret-values.js";

/** Bounds on what is read: the values are lines of small files, not archives. */
const MAX_FILES = 256;
const MAX_FILE_BYTES = 64 * 1024;
const MAX_TOTAL_BYTES = 2 * 1024 * 1024;
const MAX_DEPTH = 6;

/**
 * The values in the secret files a run's mask hides (files, and the files in
 * hidden directories), read by brokerd, which may, for the proxy to refuse.
 * A file that cannot be read, a link, a file past the bounds, are skipped: the
 * rules still run on every request; this is the second net, for values no rule
 * knows the shape of. Each value says which file it came from (for the audit line).
 */
export function secretFileValues(hidden: readonly { path: string; dir: boolean }[]): Map<string, string> {
  const out = new Map<string, string>();
  let files = 0;
  let total = 0;
  const readOne = (path: string) => {
    if (files >= MAX_FILES || total >= MAX_TOTAL_BYTES) return;
    let fd: number;
    try {
      fd = openSync(path, fs.O_RDONLY | fs.O_NOFOLLOW | fs.O_NONBLOCK);
    } catch {
      return;
    }
    try {
      if (!fstatSync(fd).isFile()) return;
      const buf = Buffer.alloc(Math.min(MAX_FILE_BYTES, MAX_TOTAL_BYTES - total));
      const n = readSync(fd, buf, 0, buf.length, 0);
      files++;
      total += n;
      for (const v of valuesInSecretText(buf.subarray(0, n).toString("utf8"))) if (!out.has(v)) out.set(v, path);
    } catch {
      // Unreadable now (gone, a device): nothing known from it.
    } finally {
      closeSync(fd);
    }
  };
  const walk = (dir: string, depth: number) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isFile()) readOne(join(dir, e.name));
      else if (e.isDirectory() && depth < MAX_DEPTH) walk(join(dir, e.name), depth + 1);
    }
  };
  for (const h of hidden) {
    if (h.dir) walk(h.path, 0);
    else readOne(h.path);
  }
  return out;
}
