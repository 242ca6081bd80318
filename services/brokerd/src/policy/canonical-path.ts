import { lstatSync, realpathSync } from "node:fs";
import { basename, dirname, join, sep } from "node:path";
import { Refused } from "../errors.js";

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

export const within = (root: string, p: string) => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
