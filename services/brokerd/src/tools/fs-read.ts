import { closeSync, lstatSync, read, readdirSync, readlinkSync, readSync } from "node:fs";
import { promisify } from "node:util";
import { NotADirectory, ToolError } from "../errors.js";
import { components, fdPath, openDirAt, openFileAt, type SecretCheck } from "./fs-walk.js";

// Reads through the descriptor the no-symlink walk reached (fs-walk.ts): never by path.

export interface FileContent {
  text: string;
  size: number;
}

/** Reads a whole (small) regular file by its canonical relative path. */
export function readFileAt(root: string, rel: string, secrets: SecretCheck, maxBytes: number): FileContent {
  const { fd, st } = openFileAt(root, rel, secrets);
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
const MAX_SCAN_BYTES = 64 * 1024 * 1024;

/**
 * A line range of a file too large to load whole: read in chunks (async, so
 * other calls keep being served), keeping only the lines asked for, each cut
 * at `maxLine` bytes and all of them at `maxBytes`. Memory stays bounded for a
 * 2 GB file with no newline at all.
 */
export async function readLinesAt(
  root: string,
  rel: string,
  secrets: SecretCheck,
  from: number,
  to: number,
  opts: { maxLine: number; maxBytes: number; maxScan?: number; signal?: AbortSignal },
): Promise<LineRange> {
  const maxScan = opts.maxScan ?? MAX_SCAN_BYTES;
  const { fd } = openFileAt(root, rel, secrets);
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
    if (room <= 0) {
      if (b.length) cut = true;
      return;
    }
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
    if (err instanceof NotADirectory) throw new ToolError(`${rel} is a file; use read_file`);
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
