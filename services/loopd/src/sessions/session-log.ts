import { closeSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync, existsSync } from "node:fs";
import { dirname } from "node:path";
import { createHash } from "node:crypto";
import { fsyncDir, messageOf } from "@boxmaker/common";
import { LogCorruptError, LogWriteError } from "../errors.js";
import type { LogRecord } from "./log-record.js";

// The record types have their own module so errors.ts can name them without importing the log.
export type { LogRecord, SessionRoleName, ToolMeta } from "./log-record.js";

/** A record as stored: its sequence number and a checksum that exposes torn or edited lines. */
interface Envelope {
  seq: number;
  crc: string;
  rec: LogRecord;
}

const checksum = (seq: number, body: string) =>
  createHash("sha256").update(`${seq}:${body}`).digest("hex").slice(0, 16);

export interface LoadResult {
  records: LogRecord[];
  /** Bytes dropped from the end because the last write was torn by a crash. */
  droppedTailBytes: number;
}

export interface AppendOptions {
  /** Written now, made durable by the next append's fsync (see `appendAll`). */
  durableWithNext?: boolean;
}

/**
 * An append-only, fsync'd JSON-lines log. A record is durable when `append`
 * returns; a torn final line (crash mid-write) is detected by its missing
 * newline or bad checksum and cut off on open, never parsed as truth.
 * Corruption anywhere before the tail is refused loudly instead.
 */
export class SessionLog {
  private fd: number;
  private nextSeq: number;
  private size: number;

  private constructor(
    readonly path: string,
    fd: number,
    nextSeq: number,
    size: number,
  ) {
    this.fd = fd;
    this.nextSeq = nextSeq;
    this.size = size;
  }

  static open(path: string): { log: SessionLog } & LoadResult {
    mkdirSync(dirname(path), { recursive: true });
    const existed = existsSync(path);
    const { records, goodBytes, totalBytes } = existed
      ? SessionLog.scan(path)
      : { records: [], goodBytes: 0, totalBytes: 0 };
    const fd = openSync(path, existed ? "r+" : "w+");
    if (goodBytes < totalBytes) {
      ftruncateSync(fd, goodBytes);
      fsyncSync(fd);
    }
    if (!existed) fsyncDir(dirname(path));
    const log = new SessionLog(path, fd, records.length, goodBytes);
    return { log, records, droppedTailBytes: totalBytes - goodBytes };
  }

  /** Reads a log without opening it for writing (for inspection and tests). */
  static read(path: string): LoadResult {
    const { records, goodBytes, totalBytes } = SessionLog.scan(path);
    return { records, droppedTailBytes: totalBytes - goodBytes };
  }

  private static scan(path: string): { records: LogRecord[]; goodBytes: number; totalBytes: number } {
    const buf = readFileSync(path);
    const records: LogRecord[] = [];
    let pos = 0;
    while (pos < buf.length) {
      const nl = buf.indexOf(0x0a, pos);
      const isLast = nl < 0 || nl === buf.length - 1;
      const line = buf.subarray(pos, nl < 0 ? buf.length : nl).toString("utf8");
      const env = nl < 0 ? undefined : parseEnvelope(line, records.length);
      if (!env) {
        // Only the final line may be damaged: that is what a crash mid-append leaves.
        if (isLast) return { records, goodBytes: pos, totalBytes: buf.length };
        throw new LogCorruptError(`${path}: record ${records.length + 1} is damaged and is not the last one`, records);
      }
      records.push(env.rec);
      pos = nl + 1;
    }
    return { records, goodBytes: buf.length, totalBytes: buf.length };
  }

  /** Appends and fsyncs. Returns once the record is on disk. */
  append(rec: LogRecord, opts?: AppendOptions): number {
    return this.appendAll([rec], opts);
  }

  /**
   * Appends records that belong together with one write and one fsync (a
   * turn's start and its user message): all of them are durable when it
   * returns, or none is kept. Returns the first record's sequence number.
   *
   * `durableWithNext` writes now and leaves the fsync to the next append, for
   * a record nothing acts on or announces before another is written (a
   * turn's final answer, followed at once by the turn's end): one fsync for
   * both. A crash between the two loses the record exactly as a crash just
   * before it would have.
   */
  appendAll(recs: readonly LogRecord[], { durableWithNext = false }: AppendOptions = {}): number {
    const seq = this.nextSeq;
    let lines = "";
    for (const [i, rec] of recs.entries()) {
      const body = JSON.stringify(rec);
      lines += `{"seq":${seq + i},"crc":"${checksum(seq + i, body)}","rec":${body}}\n`;
    }
    const bytes = Buffer.from(lines, "utf8");
    try {
      let off = 0;
      while (off < bytes.length) off += writeSync(this.fd, bytes, off, bytes.length - off, this.size + off);
      if (!durableWithNext) fsyncSync(this.fd);
    } catch (err) {
      // A full disk or I/O error must not leave half a record for the next append to follow.
      try {
        ftruncateSync(this.fd, this.size);
      } catch {
        /* the torn tail is cut on the next open anyway */
      }
      throw new LogWriteError(`${this.path}: could not persist record: ${messageOf(err)}`, { cause: err });
    }
    this.size += bytes.length;
    this.nextSeq += recs.length;
    return seq;
  }

  get length(): number {
    return this.nextSeq;
  }

  close(): void {
    closeSync(this.fd);
  }
}

function parseEnvelope(line: string, expectedSeq: number): Envelope | undefined {
  let env: Envelope;
  try {
    env = JSON.parse(line) as Envelope;
  } catch {
    return undefined;
  }
  if (env?.seq !== expectedSeq || typeof env.rec !== "object") return undefined;
  // The checksum covers the record as written; recompute from the line's own text.
  const start = line.indexOf(',"rec":');
  if (start < 0) return undefined;
  const body = line.slice(start + ',"rec":'.length, -1);
  return checksum(env.seq, body) === env.crc ? env : undefined;
}
