import { lstatSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";

/** Bytes and files under one directory, its subdirectories included. */
export interface DirUsage {
  bytes: number;
  files: number;
}

/**
 * Every directory under `root`, by its path relative to `root` ("" for root
 * itself), each with the bytes and files of everything beneath it. A directory
 * `fold` picks (a blob store's fan-out) counts in its parent instead of
 * getting an entry, and so does everything in it. Files that vanish while it
 * walks (a daemon renaming a log) are skipped.
 */
export function dirUsage(root: string, o: { fold?: (name: string) => boolean } = {}): Map<string, DirUsage> {
  const out = new Map<string, DirUsage>();
  const walk = (dir: string, folded: boolean, owners: DirUsage[]): void => {
    let own = owners;
    if (!folded) {
      const u = { bytes: 0, files: 0 };
      out.set(relative(root, dir), u);
      own = [...owners, u];
    }
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const p = join(dir, name);
      let st: ReturnType<typeof lstatSync>;
      try {
        st = lstatSync(p);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(p, folded || (o.fold?.(name) ?? false), own);
      else
        for (const u of own) {
          u.bytes += st.size;
          u.files += 1;
        }
    }
  };
  walk(root, false, []);
  return out;
}

/** What each directory gained from `before` to `after` (a directory new since then grew from nothing). */
export function usageGrowth(before: Map<string, DirUsage>, after: Map<string, DirUsage>): Map<string, DirUsage> {
  const out = new Map<string, DirUsage>();
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    const b = before.get(key) ?? { bytes: 0, files: 0 };
    const a = after.get(key) ?? { bytes: 0, files: 0 };
    out.set(key, { bytes: a.bytes - b.bytes, files: a.files - b.files });
  }
  return out;
}
