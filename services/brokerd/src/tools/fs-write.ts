import { randomBytes } from "node:crypto";
import { closeSync, constants, fsyncSync, lstatSync, openSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { ToolError } from "../errors.js";
import { components, describeType, fdPath, openDirAt } from "./fs-walk.js";

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;

/**
 * Writes a whole file atomically by its canonical relative path: the parent is
 * reached by the no-symlink walk (missing directories are created on the way),
 * a temp file is created in it with O_EXCL|O_NOFOLLOW and fsync'd, renamed over
 * the name inside that same directory fd, and the directory is fsync'd.
 */
export function writeFileAt(root: string, rel: string, content: string | Buffer): void {
  const parts = components(rel);
  const name = parts.pop();
  if (name === undefined) throw new ToolError(`${rel} is the workspace root, not a file`);
  const dirfd = openDirAt(root, parts, rel, true);
  try {
    const existing = lstatSync(fdPath(dirfd, name), { throwIfNoEntry: false });
    if (existing?.isDirectory()) throw new ToolError(`${rel} is a directory`);
    if (existing && !existing.isFile() && !existing.isSymbolicLink())
      throw new ToolError(`${rel} is ${describeType(existing)}; only regular files are written`);
    const tmp = `.${name.slice(0, 200)}.bx-${randomBytes(6).toString("hex")}`;
    const fd = openSync(fdPath(dirfd, tmp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
    try {
      const data = typeof content === "string" ? Buffer.from(content) : content;
      let off = 0;
      while (off < data.length) off += writeSync(fd, data, off, data.length - off);
      fsyncSync(fd);
    } catch (err) {
      closeSync(fd);
      try {
        unlinkSync(fdPath(dirfd, tmp));
      } catch {
        /* best effort */
      }
      throw err;
    }
    closeSync(fd);
    // rename() replaces a symlink at the final name instead of writing through it.
    renameSync(fdPath(dirfd, tmp), fdPath(dirfd, name));
    fsyncSync(dirfd);
  } finally {
    closeSync(dirfd);
  }
}
