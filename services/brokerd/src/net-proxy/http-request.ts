/**
 * The first request on a proxy connection, HTTP side: `CONNECT host:port` (https, and
 * anything a client tunnels) or an absolute-form request (`GET http://host/ HTTP/1.1`,
 * what curl, npm and pip send for plain http). Pure: bytes in, a verdict out.
 */

export type HttpProxyHead =
  | { kind: "incomplete" }
  | { kind: "bad"; why: string }
  /** `rest`: bytes the client sent after the head, already meant for the tunnel. */
  | { kind: "connect"; host: string; port: number; rest: Buffer }
  /** `head`: the request as the origin server must see it (origin-form, no proxy headers). */
  | { kind: "forward"; host: string; port: number; head: Buffer; rest: Buffer };

/** A head longer than this is refused: no client needs more to name a host, and the buffer is bounded. */
export const MAX_HEAD_BYTES = 16 * 1024;

const END = Buffer.from("\r\n\r\n");
const REQUEST_LINE = /^([A-Z]{1,20}) ([\x21-\x7e]{1,8192}) HTTP\/1\.([01])$/;
const PORT = /^[0-9]{1,5}$/;

/** Headers meant for the proxy itself: the origin never sees them (a Proxy-Authorization would leak). */
const HOP_HEADERS = /^(proxy-connection|proxy-authorization|proxy-authenticate)$/i;

function port(text: string): number | undefined {
  if (!PORT.test(text)) return undefined;
  const n = Number(text);
  return n >= 1 && n <= 65535 ? n : undefined;
}

/** `host:port` or `[v6]:port`, nothing else: no userinfo, no path, the port always given. */
export function parseAuthority(target: string): { host: string; port: number } | undefined {
  const v6 = /^\[([0-9a-fA-F:.]{2,45})\]:([^:]*)$/.exec(target);
  const plain = /^([^:@/?#[\]\\\s]{1,253}):([^:]*)$/.exec(target);
  const m = v6 ?? plain;
  if (!m) return undefined;
  const p = port(m[2]!);
  return p === undefined ? undefined : { host: m[1]!, port: p };
}

export function parseHttpProxyHead(buf: Buffer): HttpProxyHead {
  const end = buf.indexOf(END);
  if (end < 0) {
    // Refused at once when the start can be no request line (a TLS hello, a SOCKS4 client), not at the time limit.
    const eol = buf.indexOf("\r\n");
    const first = buf.subarray(0, eol < 0 ? buf.length : eol).toString("latin1");
    if ((buf.length > 0 && !/^[A-Z]/.test(first)) || (eol >= 0 && !REQUEST_LINE.test(first)))
      return { kind: "bad", why: "not an HTTP/1.x request line" };
    return buf.length >= MAX_HEAD_BYTES ? { kind: "bad", why: "request head over 16 KiB" } : incomplete;
  }
  if (end + END.length > MAX_HEAD_BYTES) return { kind: "bad", why: "request head over 16 KiB" };
  const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
  const m = REQUEST_LINE.exec(lines[0]!);
  if (!m) return { kind: "bad", why: "not an HTTP/1.x request line" };
  const [, method, target, minor] = m as unknown as [string, string, string, string];
  const headers = lines.slice(1);
  // A bare CR or LF inside the head is how requests are smuggled past a proxy that reads lines differently.
  if (headers.some((h) => /[\r\n\0]/.test(h) || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+:/.test(h)))
    return { kind: "bad", why: "malformed header line" };
  const rest = Buffer.from(buf.subarray(end + END.length));
  if (method === "CONNECT") {
    const a = parseAuthority(target);
    if (!a) return { kind: "bad", why: "CONNECT needs host:port" };
    return { kind: "connect", ...a, rest };
  }
  if (!target.toLowerCase().startsWith("http://"))
    return { kind: "bad", why: "only absolute http:// requests and CONNECT are proxied (https goes through CONNECT)" };
  let u: URL;
  try {
    u = new URL(target);
  } catch {
    return { kind: "bad", why: "the request's URL does not parse" };
  }
  if (!u.hostname) return { kind: "bad", why: "the request's URL names no host" };
  const p = u.port ? Number(u.port) : 80;
  const kept = headers.filter((h) => !HOP_HEADERS.test(h.slice(0, h.indexOf(":")).trim()));
  const origin = `${method} ${u.pathname}${u.search} HTTP/1.${minor}`;
  const head = Buffer.from(`${[origin, ...kept].join("\r\n")}\r\n\r\n`, "latin1");
  return { kind: "forward", host: u.hostname, port: p, head, rest };
}

const incomplete: HttpProxyHead = { kind: "incomplete" };

/** A short plain-text answer that ends the connection: what curl prints is the reason. */
export function httpRefusal(status: 400 | 403 | 502 | 503 | 504, text: string): Buffer {
  const reason = {
    400: "Bad Request",
    403: "Forbidden",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
  }[status];
  const body = `boxmaker proxy: ${text}\n`;
  return Buffer.from(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

export const CONNECT_OK = Buffer.from("HTTP/1.1 200 Connection established\r\n\r\n");
