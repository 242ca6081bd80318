import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  read,
  readdirSync,
  readlinkSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
  type Stats,
} from "node:fs";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { Refused } from "../errors.js";
import { ToolError } from "../errors.js";
import { messageOf } from "@boxmaker/common";

/**
 * Race-free file access. Node has no openat(), but `/proc/self/fd/<dirfd>/<name>`
 * resolves `<name>` inside the very directory object `dirfd` refers to. Every
 * operation opens the workspace root, walks the (already checked, canonical)
 * relative path one component at a time with O_NOFOLLOW, and acts on the fd it
 * reached: a directory swapped for a symlink after the check makes the walk fail
 * (ELOOP) instead of being followed out of the workspace.
 */

/** Longest path and deepest nesting any tool accepts: bounds every walk and matcher. */
export const MAX_PATH_BYTES = 4096;
export const MAX_DEPTH = 128;

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_WRONLY, O_CREAT, O_EXCL } = constants;
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
  if (code === "ENOTDIR") return new ToolError(`a component of ${rel} is not a directory`);
  if (code === "ENOENT") return new ToolError(`${rel} does not exist`);
  if (code === "EACCES" || code === "EPERM") return new ToolError(`${rel} is not accessible (${code})`);
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

function describeType(st: Stats): string {
  if (st.isFIFO()) return "a named pipe (FIFO)";
  if (st.isSocket()) return "a socket";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  if (st.isSymbolicLink()) return "a symlink";
  return "not a regular file";
}

/**
 * Opens a regular file under `root` by its canonical relative path. The type is
 * checked with lstat before the open (a FIFO or device is never opened) and
 * with fstat after it (O_NONBLOCK: a FIFO swapped in meanwhile does not block).
 */
export function openFileAt(root: string, rel: string): { fd: number; st: Stats } {
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
    return { fd, st };
  } finally {
    closeSync(dirfd);
  }
}

export interface FileContent {
  text: string;
  size: number;
}

/** Reads a whole (small) regular file by its canonical relative path. */
export function readFileAt(root: string, rel: string, maxBytes: number): FileContent {
  const { fd, st } = openFileAt(root, rel);
  try {
    if (st.size > maxBytes) {
      throw new ToolError(
        `${rel} is ${st.size} bytes, above the ${maxBytes}-byte limit; read it in parts with start_line/end_line`,
      );
    }
    const buf = Buffer.alloc(st.size);
    let off = 0;
    while (off < st.size) {
      const n = readSync(fd, buf, off, st.size - off, off);
      if (n === 0) break;
      off += n;
    }
    const body = buf.subarray(0, off);
    if (body.subarray(0, 8192).includes(0))
      throw new ToolError(`${rel} is a binary file (${st.size} bytes); not shown`);
    return { text: body.toString("utf8"), size: st.size };
  } finally {
    closeSync(fd);
  }
}

/** Whether `rel` names an existing entry (of any type), without following a final symlink. */
export function existsAt(root: string, rel: string): boolean {
  const parts = components(rel);
  const name = parts.pop();
  if (name === undefined) return true;
  let dirfd: number;
  try {
    dirfd = openDirAt(root, parts, rel);
  } catch (err) {
    if (err instanceof ToolError) return false;
    throw err;
  }
  try {
    return lstatSync(fdPath(dirfd, name), { throwIfNoEntry: false }) !== undefined;
  } finally {
    closeSync(dirfd);
  }
}

const readAsync = promisify(read);

export interface LineRange {
  lines: string[];
  /** Lines in the file, when the scan reached its end. */
  total: number | undefined;
  /** A line longer than the per-line cap was cut. */
  cut: boolean;
  /** The scan stopped at MAX_SCAN_BYTES before reaching the range's end. */
  stopped?: number;
}

/** How far one ranged read scans a file before it stops and says so. */
export const MAX_SCAN_BYTES = 64 * 1024 * 1024;

/**
 * A line range of a file too large to load whole: read in chunks (async, so
 * other calls keep being served), keeping only the lines asked for, each cut
 * at `maxLine` bytes and all of them at `maxBytes`. Memory stays bounded for a
 * 2 GB file with no newline at all.
 */
export async function readLinesAt(
  root: string,
  rel: string,
  from: number,
  to: number,
  opts: { maxLine: number; maxBytes: number; maxScan?: number; signal?: AbortSignal },
): Promise<LineRange> {
  const maxScan = opts.maxScan ?? MAX_SCAN_BYTES;
  const { fd } = openFileAt(root, rel);
  const buf = Buffer.alloc(64 * 1024);
  const lines: string[] = [];
  let line = 1;
  let cur: Buffer[] = [];
  let curLen = 0;
  let kept = 0;
  let cut = false;
  let pos = 0;
  let pending = false;
  const keep = (b: Buffer) => {
    const room = Math.min(opts.maxLine - curLen, opts.maxBytes - kept);
    if (room <= 0) return void (b.length && (cut = true));
    const piece = b.length > room ? b.subarray(0, room) : b;
    if (piece.length < b.length) cut = true;
    cur.push(Buffer.from(piece));
    curLen += piece.length;
    kept += piece.length;
  };
  const endLine = () => {
    if (line >= from && line <= to)
      lines.push(Buffer.concat(cur).toString("utf8") + (curLen >= opts.maxLine ? " […line cut]" : ""));
    cur = [];
    curLen = 0;
    line++;
  };
  try {
    for (;;) {
      opts.signal?.throwIfAborted();
      const { bytesRead } = await readAsync(fd, buf, 0, buf.length, pos);
      if (bytesRead === 0) break;
      if (pos === 0 && buf.subarray(0, Math.min(bytesRead, 8192)).includes(0))
        throw new ToolError(`${rel} is a binary file; not shown`);
      pos += bytesRead;
      if (pos > maxScan) {
        if (pending && line >= from && line <= to) endLine();
        return { lines, total: undefined, cut: true, stopped: maxScan };
      }
      let start = 0;
      const chunk = buf.subarray(0, bytesRead);
      for (;;) {
        const nl = chunk.indexOf(10, start);
        const inRange = line >= from && line <= to;
        if (nl < 0) {
          if (inRange) keep(chunk.subarray(start));
          if (start < chunk.length) pending = true;
          break;
        }
        if (inRange) keep(chunk.subarray(start, nl));
        endLine();
        pending = false;
        start = nl + 1;
        if (line > to) return { lines, total: undefined, cut };
      }
    }
    // A final line without a trailing newline counts as a line.
    if (pending) endLine();
    const total = line - 1;
    return { lines, total, cut };
  } finally {
    closeSync(fd);
  }
}

export interface DirEntry {
  name: string;
  kind: "dir" | "file" | "symlink" | "special";
  size: number;
  target?: string;
}

/** Lists a directory by its canonical relative path, through the fd the walk reached. */
export function listDirAt(root: string, rel: string, cap = Infinity): { entries: DirEntry[]; total: number } {
  const parts = components(rel);
  let fd: number;
  try {
    fd = openDirAt(root, parts, rel);
  } catch (err) {
    if (err instanceof ToolError && /is not a directory/.test(err.message))
      throw new ToolError(`${rel} is a file; use read_file`);
    throw err;
  }
  try {
    const all = readdirSync(fdPath(fd)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const entries = all.slice(0, cap).map((name): DirEntry => {
      const st = lstatSync(fdPath(fd, name), { throwIfNoEntry: false });
      if (!st) return { name, kind: "special" as const, size: 0 };
      if (st.isDirectory()) return { name, kind: "dir" as const, size: 0 };
      if (st.isFile()) return { name, kind: "file" as const, size: st.size };
      if (st.isSymbolicLink()) {
        let target = "?";
        try {
          target = readlinkSync(fdPath(fd, name));
        } catch {
          /* vanished */
        }
        return { name, kind: "symlink" as const, size: 0, target };
      }
      return { name, kind: "special" as const, size: 0 };
    });
    return { entries, total: all.length };
  } finally {
    closeSync(fd);
  }
}

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
