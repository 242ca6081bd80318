/**
 * The few facts of a GGUF file a memory plan needs, read from its header
 * (llama.cpp's gguf format, version 2 or 3): the architecture's layer count,
 * attention heads and head sizes, and where the tensor data starts. Only the
 * header is read — a 69 GB model costs a few megabytes of reading (its
 * vocabulary) — and every length in it is bounded, so a damaged or hostile
 * file is a clear error, not a hang or an allocation of its choosing.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";

export class GgufError extends Error {
  constructor(path: string, what: string) {
    super(`${path}: not a usable GGUF file: ${what}`);
    this.name = "GgufError";
  }
}

/** A header value: numbers (u64/i64 as bigint when beyond 2^53), strings, booleans, or arrays of them. */
type GgufValue = number | bigint | string | boolean | GgufValue[];

export interface GgufHeader {
  version: number;
  tensorCount: number;
  /** Every key and its value; long arrays (a vocabulary) keep only their length. */
  kv: Map<string, GgufValue | { arrayOf: number; length: number }>;
  /** Bytes from the start of the file to the tensor data (aligned). */
  dataOffset: number;
  fileBytes: number;
}

const MAX_KV = 100_000;
const MAX_TENSORS = 1_000_000;
const MAX_STRING = 16 * 1024 * 1024;
const MAX_DIMS = 8;
/** Arrays longer than this keep only their length (vocabularies, merges): nothing the plan reads is one. */
const KEPT_ARRAY = 4096;
const MAX_ARRAY = 100_000_000;

/** Reads a file front to back through a buffer, never past what the header says it holds. */
class HeaderReader {
  private buf = Buffer.alloc(1 << 20);
  private start = 0;
  private end = 0;
  /** File offset of buf[0]. */
  private base = 0;

  constructor(
    private readonly fd: number,
    private readonly path: string,
    private readonly size: number,
  ) {}

  get offset(): number {
    return this.base + this.start;
  }

  private need(n: number): void {
    if (this.end - this.start >= n) return;
    if (this.offset + n > this.size)
      throw new GgufError(this.path, `the header runs past the end of the file at byte ${this.offset}`);
    if (n > this.buf.length) this.buf = Buffer.concat([this.buf, Buffer.alloc(n)]);
    this.buf.copy(this.buf, 0, this.start, this.end);
    this.base += this.start;
    this.end -= this.start;
    this.start = 0;
    while (this.end < n) {
      const got = readSync(this.fd, this.buf, this.end, this.buf.length - this.end, this.base + this.end);
      if (got === 0) throw new GgufError(this.path, `the file ends inside its header at byte ${this.base + this.end}`);
      this.end += got;
    }
  }

  private take(n: number): number {
    this.need(n);
    const at = this.start;
    this.start += n;
    return at;
  }

  u8 = () => this.buf.readUInt8(this.take(1));
  i8 = () => this.buf.readInt8(this.take(1));
  u16 = () => this.buf.readUInt16LE(this.take(2));
  i16 = () => this.buf.readInt16LE(this.take(2));
  u32 = () => this.buf.readUInt32LE(this.take(4));
  i32 = () => this.buf.readInt32LE(this.take(4));
  f32 = () => this.buf.readFloatLE(this.take(4));
  f64 = () => this.buf.readDoubleLE(this.take(8));
  u64 = (): number | bigint => small(this.buf.readBigUInt64LE(this.take(8)));
  i64 = (): number | bigint => small(this.buf.readBigInt64LE(this.take(8)));

  /** A u64 that must be a count below `max`. */
  count(what: string, max: number): number {
    const n = this.buf.readBigUInt64LE(this.take(8));
    if (n > BigInt(max)) throw new GgufError(this.path, `${what} is ${n}, more than a real file holds (${max})`);
    return Number(n);
  }

  string(): string {
    const n = this.count("a string's length", MAX_STRING);
    const at = this.take(n);
    return this.buf.toString("utf8", at, at + n);
  }

  skip(n: number): void {
    // Skipped in buffer-sized steps so a long array of fixed-size items costs no allocation.
    while (n > 0) {
      const step = Math.min(n, this.buf.length);
      this.take(step);
      n -= step;
    }
  }
}

const small = (n: bigint): number | bigint =>
  n <= BigInt(Number.MAX_SAFE_INTEGER) && n >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;

/** gguf_type: the fixed size of each scalar type, in bytes (string and array have none). */
const SCALAR_BYTES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const STRING = 8;
const ARRAY = 9;

function scalar(r: HeaderReader, type: number): GgufValue {
  switch (type) {
    case 0:
      return r.u8();
    case 1:
      return r.i8();
    case 2:
      return r.u16();
    case 3:
      return r.i16();
    case 4:
      return r.u32();
    case 5:
      return r.i32();
    case 6:
      return r.f32();
    case 7:
      return r.u8() !== 0;
    case STRING:
      return r.string();
    case 10:
      return r.u64();
    case 11:
      return r.i64();
    case 12:
      return r.f64();
    default:
      throw new Error(`unknown value type ${type}`);
  }
}

function value(r: HeaderReader, type: number, path: string): GgufValue | { arrayOf: number; length: number } {
  if (type !== ARRAY) {
    if (type !== STRING && SCALAR_BYTES[type] === undefined) throw new GgufError(path, `unknown value type ${type}`);
    return scalar(r, type);
  }
  const itemType = r.u32();
  if (itemType === ARRAY) throw new GgufError(path, "an array of arrays");
  if (itemType !== STRING && SCALAR_BYTES[itemType] === undefined)
    throw new GgufError(path, `unknown array type ${itemType}`);
  const length = r.count("an array's length", MAX_ARRAY);
  if (length <= KEPT_ARRAY) return Array.from({ length }, () => scalar(r, itemType));
  if (itemType === STRING) for (let i = 0; i < length; i++) r.skip(r.count("a string's length", MAX_STRING));
  else r.skip(length * SCALAR_BYTES[itemType]!);
  return { arrayOf: itemType, length };
}

/** The header of the GGUF file at `path`. */
export function readGgufHeader(path: string): GgufHeader {
  const fd = openSync(path, "r");
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new GgufError(path, "not a regular file");
    const r = new HeaderReader(fd, path, st.size);
    if (st.size < 24) throw new GgufError(path, `${st.size} bytes is too short for a header`);
    const magic = [r.u8(), r.u8(), r.u8(), r.u8()];
    if (String.fromCharCode(...magic) !== "GGUF") throw new GgufError(path, "it does not start with GGUF");
    const version = r.u32();
    if (version !== 2 && version !== 3) throw new GgufError(path, `version ${version} (this reads 2 and 3)`);
    const tensorCount = r.count("the tensor count", MAX_TENSORS);
    const kvCount = r.count("the key count", MAX_KV);
    const kv: GgufHeader["kv"] = new Map();
    for (let i = 0; i < kvCount; i++) {
      const key = r.string();
      kv.set(key, value(r, r.u32(), path));
    }
    for (let i = 0; i < tensorCount; i++) {
      r.string();
      const dims = r.u32();
      if (dims > MAX_DIMS) throw new GgufError(path, `a tensor with ${dims} dimensions`);
      r.skip(dims * 8 + 4 + 8);
    }
    const alignment = kv.get("general.alignment");
    const align = typeof alignment === "number" && alignment > 0 ? alignment : 32;
    const dataOffset = Math.ceil(r.offset / align) * align;
    return { version, tensorCount, kv, dataOffset, fileBytes: st.size };
  } finally {
    closeSync(fd);
  }
}
