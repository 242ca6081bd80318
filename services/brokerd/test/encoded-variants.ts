import { deflateSync, gzipSync } from "node:zlib";

/**
 * The ways a command re-encodes a secret before sending it, as the shell's own
 * tools print them: `base64` (wrapped at 76, or -w0), url-safe and unpadded
 * base64, `xxd -p` (60 a line), `od -An -tx1`, hex in capitals, every byte
 * percent-encoded, JSON's \u escapes, gzip and zlib, and two layers of them.
 * `lead`: bytes before the secret, so base64 starts it at each of its three
 * alignments. Binary ones can ride only in a body.
 */
export interface Encoding {
  name: string;
  binary: boolean;
  /** A line break inside: not for a URL or a header line. */
  multiline: boolean;
  encode(b: Buffer): Buffer;
}

const text = (f: (b: Buffer) => string) => (b: Buffer) => Buffer.from(f(b), "latin1");
const wrap = (s: string, n: number) => s.replace(new RegExp(`(.{${n}})`, "g"), "$1\n").replace(/\n$/, "");

export const ENCODINGS: readonly Encoding[] = [
  { name: "base64", binary: false, multiline: true, encode: text((b) => wrap(b.toString("base64"), 76)) },
  { name: "base64 -w0", binary: false, multiline: false, encode: text((b) => b.toString("base64")) },
  {
    name: "base64url unpadded",
    binary: false,
    multiline: false,
    encode: text((b) => b.toString("base64url")),
  },
  { name: "xxd -p", binary: false, multiline: true, encode: text((b) => wrap(b.toString("hex"), 60)) },
  {
    name: "od -An -tx1",
    binary: false,
    multiline: true,
    encode: text((b) => wrap([...b].map((x) => ` ${x.toString(16).padStart(2, "0")}`).join(""), 48)),
  },
  { name: "HEX", binary: false, multiline: false, encode: text((b) => b.toString("hex").toUpperCase()) },
  {
    name: "percent every byte",
    binary: false,
    multiline: false,
    encode: text((b) => [...b].map((x) => `%${x.toString(16).padStart(2, "0")}`).join("")),
  },
  {
    name: "json \\u",
    binary: false,
    multiline: false,
    encode: text((b) =>
      [...b.toString("latin1")].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join(""),
    ),
  },
  { name: "gzip", binary: true, multiline: true, encode: (b) => gzipSync(b) },
  { name: "zlib", binary: true, multiline: true, encode: (b) => deflateSync(b) },
  {
    name: "gzip | base64",
    binary: false,
    multiline: true,
    encode: text((b) => wrap(gzipSync(b).toString("base64"), 76)),
  },
  {
    name: "base64 | base64",
    binary: false,
    multiline: false,
    encode: text((b) => Buffer.from(b.toString("base64")).toString("base64")),
  },
  {
    name: "base64 | urlencode",
    binary: false,
    multiline: false,
    encode: text((b) => encodeURIComponent(b.toString("base64"))),
  },
];

/** `secret` with `lead` bytes before it and a line after, encoded. */
export function encoded(e: Encoding, secret: string, lead: number): Buffer {
  return e.encode(Buffer.concat([Buffer.from(" ".repeat(lead)), Buffer.from(`${secret}\n`, "utf8")]));
}

export const CARRIERS = ["url", "header", "body", "chunked"] as const;
export type Carrier = (typeof CARRIERS)[number];

export function fits(e: Encoding, c: Carrier): boolean {
  return c === "body" || c === "chunked" || (!e.binary && !e.multiline);
}

/** A request (origin-form head, body as sent) carrying `data`; chunked bodies are cut at `cuts`. */
export function request(c: Carrier, data: Buffer, cuts: readonly number[] = []): { head: Buffer; body: Buffer } {
  const h = (lines: string[]) => Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
  const s = data.toString("latin1");
  switch (c) {
    case "url":
      return { head: h([`GET /in?d=${s} HTTP/1.1`, "Host: h.test"]), body: Buffer.alloc(0) };
    case "header":
      return { head: h(["GET /in HTTP/1.1", "Host: h.test", `X-Data: ${s}`]), body: Buffer.alloc(0) };
    case "body":
      return { head: h(["POST /in HTTP/1.1", "Host: h.test", `Content-Length: ${data.length}`]), body: data };
    case "chunked": {
      const at = [...new Set(cuts.map((x) => x % (data.length + 1)))].sort((a, b) => a - b);
      const pieces: Buffer[] = [];
      let from = 0;
      for (const to of [...at, data.length]) {
        if (to <= from) continue;
        const p = data.subarray(from, to);
        pieces.push(Buffer.from(`${p.length.toString(16)}\r\n`), p, Buffer.from("\r\n"));
        from = to;
      }
      pieces.push(Buffer.from("0\r\n\r\n"));
      return {
        head: h(["POST /in HTTP/1.1", "Host: h.test", "Transfer-Encoding: chunked"]),
        body: Buffer.concat(pieces),
      };
    }
  }
}
