import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, type Stats } from "node:fs";
import { messageOf } from "@boxmaker/common";
import { NotADirectory, Refused, ToolError } from "../errors.js";
import type { SecretIdentities } from "../policy/secret-identity.js";

/**
 * Race-free file access. Node has no openat(), but `/proc/self/fd/<dirfd>/<name>`
 * resolves `<name>` inside the very directory object `dirfd` refers to. Every
 * operation opens the workspace root, walks the (already checked, canonical)
 * relative path one component at a time with O_NOFOLLOW, and acts on the fd it
 * reached: a directory swapped for a symlink after the check makes the walk fail
 * (ELOOP) instead of being followed out of the workspace.
 */

/** Longest path and deepest nesting any tool accepts: bounds every walk and matcher. */
const MAX_PATH_BYTES = 4096;
export const MAX_DEPTH = 128;

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
const FILE_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

export const fdPath = (fd: number, name?: string): string =>
  name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;

/** The components of a workspace-relative path; `..` never appears in a canonical path, so it is refused. */
export function components(rel: string): string[] {
  if (Buffer.byteLength(rel) > MAX_PATH_BYTES)
    throw new Refused("limit:path-length", `the path is longer than ${MAX_PATH_BYTES} bytes`);
  const parts = rel.split("/").filter((c) => c !== "" && c !== ".");
  if (parts.length > MAX_DEPTH)
    throw new Refused("limit:path-depth", `the path is nested deeper than ${MAX_DEPTH} directories`);
  if (parts.includes("..")) throw new Refused("path:invalid", "the path contains '..' after resolution");
  return parts;
}

function walkError(err: unknown, rel: string): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ELOOP")
    return new Refused(
      "path:symlink-swap",
      `a component of ${rel} is a symlink now (it changed after the check); nothing was done`,
    );
  if (code === "ENOTDIR") return new NotADirectory(`a component of ${rel} is not a directory`, { cause: err });
  if (code === "ENOENT") return new ToolError(`${rel} does not exist`);
  if (code === "EACCES" || code === "EPERM") return new ToolError(`${rel} is not accessible (${code})`);
  if (code === "ENAMETOOLONG")
    return new Refused("path:invalid", "a component of the path is longer than a file name may be");
  if (code === "EISDIR") return new ToolError(`${rel} is a directory`);
  return err as Error;
}

export function openRoot(root: string): number {
  try {
    return openSync(root, DIR_FLAGS);
  } catch (err) {
    throw new ToolError(`the workspace root ${root} cannot be opened: ${messageOf(err)}`, { cause: err });
  }
}

/** Opens the directory `parts` names under `root`, creating missing ones when asked. The caller closes it. */
export function openDirAt(root: string, parts: readonly string[], rel: string, create = false): number {
  let fd = openRoot(root);
  try {
    for (const c of parts) {
      let next: number;
      try {
        next = openSync(fdPath(fd, c), DIR_FLAGS);
      } catch (err) {
        if (!create || (err as NodeJS.ErrnoException).code !== "ENOENT") throw walkError(err, rel);
        try {
          mkdirSync(fdPath(fd, c), 0o755);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw walkError(e, rel);
        }
        try {
          next = openSync(fdPath(fd, c), DIR_FLAGS);
        } catch (e) {
          throw walkError(e, rel);
        }
      }
      closeSync(fd);
      fd = next;
    }
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

export function describeType(st: Stats): string {
  if (st.isFIFO()) return "a named pipe (FIFO)";
  if (st.isSocket()) return "a socket";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  if (st.isSymbolicLink()) return "a symlink";
  return "not a regular file";
}

/**
 * The secret identities that guard a root (its PathGuard's): the file tools
 * open files below the layer that knows the guard, so each open is handed them
 * and checks what it opened, whichever tool asked.
 */
export type SecretCheck = Pick<SecretIdentities, "has">;

/**
 * Opens a regular file under `root` by its canonical relative path. The type is
 * checked with lstat before the open (a FIFO or device is never opened) and
 * with fstat after it (O_NONBLOCK: a FIFO swapped in meanwhile does not block);
 * a file `secrets` knows is refused, whatever it is called now.
 */
export function openFileAt(root: string, rel: string, secrets: SecretCheck): { fd: number; st: Stats } {
  const parts = components(rel);
  const name = parts.pop();
  if (name === undefined) throw new ToolError(`${rel} is a directory; use list_dir`);
  const dirfd = openDirAt(root, parts, rel);
  try {
    let pre: Stats;
    try {
      pre = lstatSync(fdPath(dirfd, name));
    } catch (err) {
      throw walkError(err, rel);
    }
    if (pre.isDirectory()) throw new ToolError(`${rel} is a directory; use list_dir`);
    if (pre.isSymbolicLink())
      throw new Refused("path:symlink-swap", `${rel} is a symlink now (it changed after the check); nothing was done`);
    if (!pre.isFile()) throw new ToolError(`${rel} is ${describeType(pre)}; only regular files are read`);
    let fd: number;
    try {
      fd = openSync(fdPath(dirfd, name), FILE_FLAGS);
    } catch (err) {
      throw walkError(err, rel);
    }
    const st = fstatSync(fd);
    if (!st.isFile()) {
      closeSync(fd);
      throw new ToolError(`${rel} is ${describeType(st)}; only regular files are read`);
    }
    // Checked on what was opened: a secret renamed or hard-linked to an innocent name is still the secret.
    if (secrets.has(st)) {
      closeSync(fd);
      throw new Refused(
        "path:secret",
        `${rel} is a secret file under another name (renamed or hard-linked); it is never readable`,
      );
    }
    return { fd, st };
  } finally {
    closeSync(dirfd);
  }
}
