import ipaddr from "ipaddr.js";

/**
 * SOCKS5 (RFC 1928) as far as a command needs it: no authentication, CONNECT only,
 * IPv4, IPv6 or a domain name (`socks5h://`, so the name is resolved here and judged
 * by the same checks as every other). Pure: bytes in, a verdict out.
 */

export type SocksStep<T> =
  | { kind: "incomplete" }
  | { kind: "bad"; reply: number; why: string }
  | (T & { kind: "ok"; consumed: number });

export const SOCKS = {
  SUCCEEDED: 0x00,
  GENERAL_FAILURE: 0x01,
  NOT_ALLOWED: 0x02,
  HOST_UNREACHABLE: 0x04,
  CONNECTION_REFUSED: 0x05,
  TTL_EXPIRED: 0x06,
  COMMAND_NOT_SUPPORTED: 0x07,
  ADDRESS_NOT_SUPPORTED: 0x08,
} as const;

const incomplete = { kind: "incomplete" } as const;

/** VER NMETHODS METHODS…: whether the client offers "no authentication" (0x00). */
export function parseSocksGreeting(b: Buffer): SocksStep<{ noAuth: boolean }> {
  if (b.length < 2) return incomplete;
  if (b[0] !== 5) return { kind: "bad", reply: SOCKS.GENERAL_FAILURE, why: "not SOCKS version 5" };
  const n = b[1]!;
  if (n === 0) return { kind: "bad", reply: SOCKS.GENERAL_FAILURE, why: "SOCKS greeting offers no method" };
  if (b.length < 2 + n) return incomplete;
  return { kind: "ok", consumed: 2 + n, noAuth: b.subarray(2, 2 + n).includes(0) };
}

/** VER CMD RSV ATYP DST.ADDR DST.PORT. */
export function parseSocksRequest(b: Buffer): SocksStep<{ host: string; port: number }> {
  if (b.length < 5) return incomplete;
  if (b[0] !== 5) return { kind: "bad", reply: SOCKS.GENERAL_FAILURE, why: "not SOCKS version 5" };
  if (b[1] !== 1) return { kind: "bad", reply: SOCKS.COMMAND_NOT_SUPPORTED, why: "only SOCKS CONNECT is supported" };
  if (b[2] !== 0) return { kind: "bad", reply: SOCKS.GENERAL_FAILURE, why: "SOCKS reserved byte is not zero" };
  let host: string;
  let at: number;
  switch (b[3]) {
    case 1:
      if (b.length < 10) return incomplete;
      host = [...b.subarray(4, 8)].join(".");
      at = 8;
      break;
    case 4:
      if (b.length < 22) return incomplete;
      host = ipaddr.fromByteArray([...b.subarray(4, 20)]).toString();
      at = 20;
      break;
    case 3: {
      const len = b[4]!;
      if (len === 0) return { kind: "bad", reply: SOCKS.GENERAL_FAILURE, why: "empty SOCKS domain name" };
      if (b.length < 5 + len + 2) return incomplete;
      // latin1 keeps every byte as one character, so a NUL or a non-ASCII byte is still there for the name check.
      host = b.subarray(5, 5 + len).toString("latin1");
      at = 5 + len;
      break;
    }
    default:
      return { kind: "bad", reply: SOCKS.ADDRESS_NOT_SUPPORTED, why: "unknown SOCKS address type" };
  }
  const port = b.readUInt16BE(at);
  if (port === 0) return { kind: "bad", reply: SOCKS.GENERAL_FAILURE, why: "SOCKS port 0" };
  return { kind: "ok", consumed: at + 2, host, port };
}

/** A reply with the bound address left as 0.0.0.0:0: clients read it only to skip it. */
export const socksReply = (code: number): Buffer => Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);

export const SOCKS_NO_AUTH = Buffer.from([5, 0]);
export const SOCKS_NO_METHOD = Buffer.from([5, 0xff]);
