import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fsyncSync,
  lstatSync,
  openSync,
  renameSync,
  type Stats,
  unlinkSync,
  writeSync,
} from "node:fs";
import { ToolError } from "../errors.js";
import { fixFor } from "../workspace-writable.js";
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
  let dirfd: number;
  try {
    dirfd = openDirAt(root, parts, rel, true);
  } catch (err) {
    throw unwritable(err, root, rel);
  }
  try {
    const existing = lstatSync(fdPath(dirfd, name), { throwIfNoEntry: false });
    if (existing?.isDirectory()) throw new ToolError(`${rel} is a directory`);
    if (existing && !existing.isFile() && !existing.isSymbolicLink())
      throw new ToolError(`${rel} is ${describeType(existing)}; only regular files are written`);
    const tmp = `.${name.slice(0, 200)}.bx-${randomBytes(6).toString("hex")}`;
    let fd: number;
    try {
      fd = openSync(fdPath(dirfd, tmp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
    } catch (err) {
      throw unwritable(err, root, rel);
    }
    try {
      // The new file replaces the old one's inode: it keeps the old file's mode (an edited script stays
      // executable) and, where this account may give it, its owner and group.
      if (existing?.isFile()) keepOwnership(fd, existing);
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

function keepOwnership(fd: number, was: Stats): void {
  try {
    fchownSync(fd, was.uid, was.gid);
  } catch (err) {
    // Only root may give a file away; the group may still be ours to keep.
    if ((err as NodeJS.ErrnoException).code !== "EPERM") throw err;
    try {
      fchownSync(fd, -1, was.gid);
    } catch {
      /* not a member of that group: the file is ours, as a new one would be */
    }
  }
  // After chown, which clears set-id bits; those are not kept (a model's write must not make a set-id program).
  fchmodSync(fd, was.mode & 0o777);
}

/** EROFS/EACCES from the file system, said as what it is and how to fix it (not a temp file's path). */
function unwritable(err: unknown, root: string, rel: string): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== "EROFS" && code !== "EACCES" && code !== "EPERM") return err;
  return new ToolError(`${rel} cannot be written (${code}), the workspace root ${root}: ${fixFor(root, code)}`);
}
