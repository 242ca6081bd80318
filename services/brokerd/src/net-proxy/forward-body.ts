/**
 * The body of a forwarded (plain-HTTP) request, read in full before anything goes
 * upstream, so the request can be checked for secrets as a whole. Only the first
 * request on a connection is read this way (see `SecretWatch` for what follows it).
 */
import type { Socket } from "node:net";

/** A body longer than this is refused: it cannot be inspected without holding it all. */
export const MAX_INSPECTED_BODY = 8 * 1024 * 1024;

const CONTINUE = Buffer.from("HTTP/1.1 100 Continue\r\n\r\n");

export type BodyRead =
  | { ok: true; head: Buffer; body: Buffer; rest: Buffer }
  | { ok: false; why: string; status: 400 | 403 | 504 };

interface Framing {
  length?: number;
  chunked: boolean;
  expectContinue: boolean;
}

function framing(head: string): Framing | string {
  let length: number | undefined;
  let chunked = false;
  let expectContinue = false;
  for (const line of head.split("\r\n").slice(1)) {
    const i = line.indexOf(":");
    const name = line.slice(0, i).trim().toLowerCase();
    const value = line
      .slice(i + 1)
      .trim()
      .toLowerCase();
    if (name === "content-length") {
      if (!/^[0-9]{1,15}$/.test(value) || (length !== undefined && length !== Number(value)))
        return "a Content-Length that is not one number";
      length = Number(value);
    } else if (name === "transfer-encoding") chunked = value.split(",").some((v) => v.trim() === "chunked");
    else if (name === "expect" && value === "100-continue") expectContinue = true;
  }
  if (chunked && length !== undefined) return "both Content-Length and chunked (how requests are smuggled)";
  return { ...(length !== undefined ? { length } : {}), chunked, expectContinue };
}

/** Where a chunked body ends in `b`, or -1 while it has not. Trailers are allowed. */
function chunkedEnd(b: Buffer): number {
  let at = 0;
  for (;;) {
    const eol = b.indexOf("\r\n", at);
    if (eol < 0) return -1;
    const size = Number.parseInt(b.subarray(at, eol).toString("latin1").split(";")[0]!.trim(), 16);
    if (!Number.isFinite(size)) return -2;
    if (size === 0) {
      const end = b.indexOf("\r\n\r\n", eol);
      // The zero chunk's own CRLF may be the trailer section's end.
      if (b.subarray(eol, eol + 4).equals(Buffer.from("\r\n\r\n"))) return eol + 4;
      return end < 0 ? -1 : end + 4;
    }
    at = eol + 2 + size + 2;
    if (at > b.length) return -1;
  }
}

/**
 * A chunked body's payload, its chunks joined: a secret split across two chunks
 * is whole again (the framing between them would hide it from a rule). Takes a
 * body `chunkedEnd` found complete; a malformed rest is kept as it is.
 */
export function dechunked(b: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = b.indexOf("\r\n", at);
    if (eol < 0) break;
    const size = Number.parseInt(b.subarray(at, eol).toString("latin1").split(";")[0]!.trim(), 16);
    if (!Number.isFinite(size)) break;
    // The last chunk: what follows is the trailer section, headers a secret can ride in too.
    if (size === 0) return Buffer.concat([...parts, b.subarray(eol + 2)]);
    parts.push(b.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  parts.push(b.subarray(at));
  return Buffer.concat(parts);
}

/**
 * Reads the body the head announces (Content-Length or chunked; none otherwise),
 * answering `Expect: 100-continue` itself so the client sends it at once (the
 * header is not passed on: the origin would answer it a second time).
 */
export function readForwardBody(client: Socket, head: Buffer, rest: Buffer, timeoutMs: number): Promise<BodyRead> {
  const text = head.toString("latin1");
  const f = framing(text);
  if (typeof f === "string") return Promise.resolve({ ok: false, why: `the request has ${f}`, status: 400 });
  const outHead = f.expectContinue
    ? Buffer.from(
        text
          .split("\r\n")
          .filter((l) => !/^expect\s*:/i.test(l))
          .join("\r\n"),
        "latin1",
      )
    : head;
  const done = (b: Buffer): { body: Buffer; rest: Buffer } | undefined | "bad" => {
    if (f.length !== undefined)
      return b.length >= f.length ? { body: b.subarray(0, f.length), rest: b.subarray(f.length) } : undefined;
    if (!f.chunked) return { body: Buffer.alloc(0), rest: b };
    const end = chunkedEnd(b);
    if (end === -2) return "bad";
    return end < 0 ? undefined : { body: b.subarray(0, end), rest: b.subarray(end) };
  };
  if ((f.length ?? 0) > MAX_INSPECTED_BODY)
    return Promise.resolve({
      ok: false,
      why: `the request body is over ${MAX_INSPECTED_BODY} bytes, more than the proxy inspects for secrets`,
      status: 403,
    });
  return new Promise((resolve) => {
    let buf = rest;
    const finish = (r: BodyRead) => {
      clearTimeout(timer);
      client.off("data", onData);
      client.off("end", onEnd);
      client.pause();
      resolve(r);
    };
    const check = () => {
      const d = done(buf);
      if (d === "bad") return finish({ ok: false, why: "the request's chunked body is malformed", status: 400 });
      if (d) return finish({ ok: true, head: outHead, ...d });
      if (buf.length > MAX_INSPECTED_BODY + 64 * 1024)
        finish({
          ok: false,
          why: `the request body is over ${MAX_INSPECTED_BODY} bytes, more than the proxy inspects for secrets`,
          status: 403,
        });
    };
    const onData = (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      check();
    };
    const onEnd = () =>
      finish({ ok: false, why: "the client closed before sending the whole request body", status: 400 });
    const timer = setTimeout(
      () => finish({ ok: false, why: `the request body did not arrive within ${timeoutMs} ms`, status: 504 }),
      timeoutMs,
    );
    const d = done(buf);
    if (d && d !== "bad") return finish({ ok: true, head: outHead, ...d });
    if (f.expectContinue) client.write(CONTINUE);
    client.on("data", onData);
    client.on("end", onEnd);
    client.resume();
    check();
  });
}

/** The request as text to scan: raw, and with percent-encoding (and a form's `+`) undone. */
export function requestTexts(head: Buffer, body: Buffer): string[] {
  const raw = `${head.toString("latin1")}${body.toString("utf8")}`;
  const out = [raw];
  try {
    const decoded = decodeURIComponent(raw.replace(/\+/g, " "));
    if (decoded !== raw) out.push(decoded);
  } catch {
    // A stray `%`: decode what can be, piece by piece.
    const decoded = raw.replace(/(%[0-9a-fA-F]{2})+/g, (m) => {
      try {
        return decodeURIComponent(m);
      } catch {
        return m;
      }
    });
    if (decoded !== raw) out.push(decoded);
  }
  // The URL's query decoded a parameter per line: a rule written for lines (`KEY=value` at a line's
  // end, as in a .env file) finds `?q=DB_PASSWORD%3D…` too, which the request line's " HTTP/1.1" hides.
  const target = /^[A-Z]+ (\S+) HTTP\/\d/.exec(raw)?.[1];
  if (target && /[?&;]/.test(target)) out.push(target.split(/[?&;]/).map(decodedPart).join("\n"));
  return out;
}

function decodedPart(part: string): string {
  try {
    return decodeURIComponent(part.replace(/\+/g, " "));
  } catch {
    return part;
  }
}
