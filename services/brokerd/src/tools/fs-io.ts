import { closeSync, constants, fstatSync, mkdirSync, openSync, readSync, renameSync, writeFileSync } from "node:fs";
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { basename, dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import { canonicalize } from "../policy/paths.js";
import { Refused } from "../policy/refused.js";
import { ToolError } from "../tool-table.js";

export interface FileContent {
  text: string;
  size: number;
}

/**
 * Reads a file whose path was already canonicalized. O_NOFOLLOW makes a
 * symlink swapped in after the check fail instead of being followed.
 */
export function readCanonical(abs: string, maxBytes: number): FileContent {
  let fd: number;
  try {
    fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new ToolError(`${abs} does not exist`);
    if (code === "ELOOP") throw new Refused("path:symlink-swap", `${abs} became a symlink after it was checked`);
    throw new ToolError(`cannot read ${abs}: ${(err as Error).message}`);
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new ToolError(`${abs} is a directory; use list_dir`);
    if (!st.isFile()) throw new ToolError(`${abs} is not a regular file`);
    if (st.size > maxBytes) {
      throw new ToolError(`${abs} is ${st.size} bytes, above the ${maxBytes}-byte limit; read it in parts with start_line/end_line`);
    }
    const buf = Buffer.alloc(st.size);
    let off = 0;
    while (off < st.size) {
      const n = readSync(fd, buf, off, st.size - off, off);
      if (n === 0) break;
      off += n;
    }
    const body = buf.subarray(0, off);
    if (body.subarray(0, 8192).includes(0)) throw new ToolError(`${abs} is a binary file (${st.size} bytes); not shown`);
    return { text: body.toString("utf8"), size: st.size };
  } finally {
    closeSync(fd);
  }
}

/** A line range of a file too large to load whole. */
export async function readLinesStreaming(abs: string, from: number, to: number): Promise<{ lines: string[]; total: number | undefined }> {
  let fd: number;
  try {
    fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ELOOP") throw new Refused("path:symlink-swap", `${abs} became a symlink after it was checked`);
    throw new ToolError(`cannot read ${abs}: ${(err as Error).message}`);
  }
  const rl = createInterface({ input: createReadStream("", { fd }), crlfDelay: Infinity });
  const lines: string[] = [];
  let n = 0;
  for await (const line of rl) {
    n++;
    if (n >= from && n <= to) lines.push(line);
    if (n > to) {
      rl.close();
      return { lines, total: undefined };
    }
  }
  return { lines, total: n };
}

/**
 * Writes a whole file atomically (temp file + rename in the same directory).
 * The path is canonicalized once more right before the rename: if a directory
 * on the way became a symlink since the check, the write is refused. rename()
 * replaces a symlink at the final name rather than writing through it.
 */
export function writeCanonical(abs: string, content: string): void {
  const dir = dirname(abs);
  mkdirSync(dir, { recursive: true });
  if (canonicalize(dir) !== dir) {
    throw new Refused("path:symlink-swap", `a directory on the way to ${abs} is now a symlink; nothing was written`);
  }
  const tmp = join(dir, `.${basename(abs)}.bx-${randomBytes(4).toString("hex")}`);
  writeFileSync(tmp, content, { flag: "wx", mode: 0o644 });
  renameSync(tmp, abs);
}
