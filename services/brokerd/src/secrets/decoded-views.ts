import { brotliDecompressSync, constants, inflateRawSync, inflateSync, zstdDecompressSync } from "node:zlib";

/**
 * What a text says once the encodings a shell has at hand are undone: base64
 * (`base64`, either alphabet, wrapped or not, padded or not), hex (`xxd -p`,
 * `od -An -tx1`), percent-encoding, JSON string escapes, and gzip or zlib data
 * found inside it. A command that re-encodes a secret before sending it still
 * sends the secret: the recognition that runs on the text runs on each of
 * these views too. Layers nest (gzip, then base64, then a URL's percent
 * signs) up to `maxDepth`; every view counts towards `maxBytes`, and a text
 * whose views would pass it is said to be over, for the caller to refuse:
 * what cannot be looked at whole is not let through unseen. Pure.
 */
export interface ViewLimits {
  /** Layers of decoding below the text itself. */
  maxDepth: number;
  /** All views together, the text included. */
  maxBytes: number;
}

export type Views = { ok: true; texts: string[] } | { ok: false; why: string };

/**
 * Runs of either base64 alphabet, long enough to hold a secret (a short word is
 * not worth decoding), over line breaks as `base64` wraps them. `=` ends a run:
 * Node stops decoding at it, and a padded piece is followed by another encoding.
 */
const BASE64_RUN = /[A-Za-z0-9+/_-]{12,}(?:={0,2}\r?\n[A-Za-z0-9+/_-]{2,})*/g;
/** Hex digit pairs, alone or apart as `od` and `xxd` print them (spaces, colons, line breaks). */
const HEX_RUN = /[0-9a-fA-F]{2}(?:[ \t\r\n:]{0,3}[0-9a-fA-F]{2}){5,}/g;
const PERCENT = /(?:%[0-9a-fA-F]{2})+/g;
const JSON_ESCAPE = /\\(?:u([0-9a-fA-F]{4})|([nrtbf"\\/]))/g;
const JSON_CHAR: Record<string, string> = {
  n: "\n",
  r: "\r",
  t: "\t",
  b: "\b",
  f: "\f",
  '"': '"',
  "\\": "\\",
  "/": "/",
};

/** At most this many compressed streams are tried in one view: a magic number is cheap to plant. */
const MAX_STREAMS = 8;

class OverBudget extends Error {}

/** Joined with a line break: one view per decoder, not one per run, so a text of many runs is a few views. */
function joined(parts: readonly Buffer[]): Buffer | undefined {
  if (!parts.length) return undefined;
  const out: Buffer[] = [];
  for (const p of parts) out.push(p, NL);
  return Buffer.concat(out);
}
const NL = Buffer.from("\n");

/**
 * Whether bytes read as text: most are printable ASCII or line breaks. Only a
 * text is decoded further as text (percent signs, escapes, base64 inside it);
 * bytes that are not (what a wrong start decodes to, a binary file) are looked
 * at as they are and for a compressed stream, which is where a secret in them
 * would be: decoding noise as text only makes more noise to scan.
 */
function readsAsText(b: Buffer): boolean {
  let printable = 0;
  for (let i = 0; i < b.length; i++) {
    const x = b[i]!;
    if ((x >= 0x20 && x < 0x7f) || x === 9 || x === 10 || x === 13) printable++;
  }
  return printable >= 0.7 * b.length;
}

/** Printable stretches at least this long in bytes that are not text: a base64 secret is longer. */
const MIN_ISLAND = 12;

/** The printable stretches of `b`, one a line: what of binary bytes can hold an encoded text. */
function islands(b: Buffer): string {
  const out: string[] = [];
  let from = -1;
  for (let i = 0; i <= b.length; i++) {
    const x = i < b.length ? b[i]! : 0;
    const printable = (x >= 0x20 && x < 0x7f) || x === 9 || x === 10 || x === 13;
    if (printable && from < 0) from = i;
    else if (!printable && from >= 0) {
      if (i - from >= MIN_ISLAND) out.push(b.toString("latin1", from, i));
      from = -1;
    }
  }
  return out.join("\n");
}

/** Decoded pieces joined in two views, the ones that read as text and the rest, so noise does not hide a text. */
function split(parts: readonly Buffer[]): Buffer[] {
  const text: Buffer[] = [];
  const other: Buffer[] = [];
  for (const p of parts) (readsAsText(p) ? text : other).push(p);
  return [joined(text), joined(other)].filter((v): v is Buffer => v !== undefined);
}

/**
 * Each base64 run decoded at its four starts: a run found from the wrong place
 * (`/upload/` before it is in the std alphabet too) decodes to noise at one and
 * to the bytes at another, because base64 is decoded four characters at a time.
 */
function base64Views(text: string): Buffer[] {
  const runs = [...text.matchAll(BASE64_RUN)].map((m) => m[0].replace(/[\r\n=]/g, ""));
  const out: Buffer[] = [];
  for (let shift = 0; shift < 4; shift++)
    out.push(...split(runs.filter((r) => r.length - shift >= 8).map((r) => Buffer.from(r.slice(shift), "base64"))));
  return out;
}

/** Hex runs decoded at both starts: `a` before `6b6579` is a hex digit too. */
function hexViews(text: string): Buffer[] {
  const runs = [...text.matchAll(HEX_RUN)].map((m) => m[0].replace(/[^0-9a-fA-F]/g, ""));
  const out: Buffer[] = [];
  for (let shift = 0; shift < 2; shift++)
    out.push(...split(runs.map((r) => Buffer.from(r.slice(shift, shift + ((r.length - shift) & ~1)), "hex"))));
  return out;
}

function percentView(text: string): Buffer | undefined {
  if (!text.includes("%")) return undefined;
  const out = text.replace(PERCENT, (m) => Buffer.from(m.replace(/%/g, ""), "hex").toString("latin1"));
  return out === text ? undefined : Buffer.from(out, "latin1");
}

function jsonView(text: string): Buffer | undefined {
  if (!text.includes("\\")) return undefined;
  const out = text.replace(JSON_ESCAPE, (_, hex: string | undefined, c: string | undefined) =>
    hex ? String.fromCharCode(Number.parseInt(hex, 16)) : JSON_CHAR[c!]!,
  );
  if (out === text) return undefined;
  // utf8 only when an escape named a character past U+00FF (one a rule may read); latin1 keeps a byte a byte.
  return Buffer.from(out, /[\u0100-\uffff]/.test(out) ? "utf8" : "latin1");
}

/**
 * The gzip and zlib streams that start in `b`, inflated. A stream followed by
 * other bytes, or cut short, gives what it holds (a sync flush, not an error).
 */
function streamViews(b: Buffer, room: number): Buffer[] {
  const out: Buffer[] = [];
  let tried = 0;
  const opts = { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: Math.max(1, room) };
  for (let at = b.indexOf(0x1f); at >= 0 && at + 2 < b.length && tried < MAX_STREAMS; at = b.indexOf(0x1f, at + 1)) {
    if (b[at + 1] !== 0x8b || b[at + 2] !== 8) continue;
    tried++;
    const body = gzipBody(b, at);
    if (body !== undefined) pushInflated(out, () => inflateRawSync(b.subarray(body), opts));
  }
  tried = 0;
  for (let at = b.indexOf(0x78); at >= 0 && at + 1 < b.length && tried < MAX_STREAMS; at = b.indexOf(0x78, at + 1)) {
    if (![0x01, 0x5e, 0x9c, 0xda].includes(b[at + 1]!)) continue;
    tried++;
    pushInflated(out, () => inflateSync(b.subarray(at), opts));
  }
  return out;
}

/** Where a gzip member's deflate data starts (RFC 1952: the optional fields its flags name), or undefined. */
function gzipBody(b: Buffer, at: number): number | undefined {
  const flags = b[at + 3];
  if (flags === undefined || flags & 0xe0) return undefined;
  let p = at + 10;
  if (flags & 4) p += 2 + (b.readUInt16LE(Math.min(p, b.length - 2)) || 0);
  if (flags & 8) p = b.indexOf(0, p) + 1;
  if (flags & 16) p = b.indexOf(0, p) + 1;
  if (flags & 2) p += 2;
  return p > at && p < b.length ? p : undefined;
}

function pushInflated(out: Buffer[], inflate: () => Buffer): void {
  try {
    const v = inflate();
    if (v.length) out.push(v);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw new OverBudget();
    // Not a stream after all (a magic number is two bytes any data may hold).
  }
}

/** The body as its Content-Encoding names it undone, outermost last (RFC 9110: listed in the order applied). */
export function contentDecoded(body: Buffer, codings: readonly string[], maxBytes: number): Buffer | string {
  let b = body;
  const opts = { maxOutputLength: Math.max(1, maxBytes) };
  for (const c of [...codings].reverse()) {
    try {
      if (c === "identity") continue;
      if (c === "gzip" || c === "x-gzip") b = inflateRawSync(b.subarray(gzipBody(b, 0) ?? 10), opts);
      else if (c === "deflate") b = b[0] === 0x78 ? inflateSync(b, opts) : inflateRawSync(b, opts);
      else if (c === "br") b = brotliDecompressSync(b, opts);
      else if (c === "zstd") b = zstdDecompressSync(b, opts);
      else return `a body in a Content-Encoding the proxy cannot decode (${c.slice(0, 40)})`;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE")
        return `a compressed body that inflates past ${maxBytes} bytes, more than the proxy inspects for secrets`;
      return `a body that is not the ${c.slice(0, 40)} its Content-Encoding says`;
    }
  }
  return b;
}

/** The text and every view below it, breadth first, each as latin1 (one character a byte: what a rule reads). */
export function decodedViews(input: Buffer, limits: ViewLimits): Views {
  const texts: string[] = [];
  const seen = new Set<string>();
  let bytes = 0;
  let level: Buffer[] = [input];
  try {
    for (let depth = 0; level.length; depth++) {
      const next: Buffer[] = [];
      for (const b of level) {
        const text = b.toString("latin1");
        if (seen.has(text)) continue;
        seen.add(text);
        bytes += b.length;
        if (bytes > limits.maxBytes) throw new OverBudget();
        texts.push(text);
        if (depth >= limits.maxDepth) continue;
        // Bytes that do not read as text are decoded as text only where they do: a secret wrapped in random
        // bytes (a PNG before it, noise after) is still a text island, and noise has next to none.
        const textual = readsAsText(b) ? text : islands(b);
        const asText = textual
          ? [percentView(textual), jsonView(textual), ...base64Views(textual), ...hexViews(textual)]
          : [];
        for (const v of [...asText, ...streamViews(b, limits.maxBytes - bytes)]) if (v) next.push(v);
      }
      level = next;
    }
  } catch (err) {
    if (!(err instanceof OverBudget)) throw err;
    return {
      ok: false,
      why: `encodings that decode past ${limits.maxBytes} bytes, more than the proxy inspects for secrets`,
    };
  }
  return { ok: true, texts };
}
