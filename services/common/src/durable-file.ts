import { closeSync, fsyncSync, openSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";

/** Makes a directory's entries (a new file, a rename) durable: without it a crash can lose the name. */
export function fsyncDir(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Temp file, fsync, rename, fsync the directory: after a crash the file is the old or the new one, whole. */
export function atomicWrite(file: string, text: string | Uint8Array, mode = 0o640): void {
  const tmp = `${file}.tmp`;
  const fd = openSync(tmp, "w", mode);
  try {
    const data = typeof text === "string" ? Buffer.from(text) : text;
    let off = 0;
    while (off < data.length) off += writeSync(fd, data, off, data.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  fsyncDir(dirname(file));
}
