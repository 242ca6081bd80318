/**
 * The start of a proxy connection, before any policy: which protocol the client speaks
 * (HTTP CONNECT, absolute-form HTTP or SOCKS5) and the host it names, answered in that
 * protocol. Kept apart from the server so the byte-level state machine reads on its own.
 */
import type { Socket } from "node:net";
import { CONNECT_OK, httpRefusal, MAX_HEAD_BYTES, parseHttpProxyHead } from "./http-request.js";
import type { ConnectionRecord } from "./connection-record.js";
import { parseSocksGreeting, parseSocksRequest, SOCKS, SOCKS_NO_AUTH, SOCKS_NO_METHOD, socksReply } from "./socks5.js";

const SOCKS_FOR = { 403: SOCKS.NOT_ALLOWED, 502: SOCKS.HOST_UNREACHABLE, 504: SOCKS.TTL_EXPIRED } as const;

export interface Target {
  raw: string;
  port: number;
  /** A forwarded request's head, rewritten for the origin: sent first. */
  head?: Buffer;
  /** What the client sent past the handshake, already meant for the server. */
  rest: Buffer;
  /** Tells the client the outcome in its own protocol. */
  reply(ok: boolean, why: string, status: 403 | 502 | 504): void;
}

/** Reads until the client has named a target, or fails it: bounded in bytes and in time. */
export function handshake(client: Socket, rec: ConnectionRecord, timeoutMs: number): Promise<Target | undefined> {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    let socks: "greeting" | "request" | undefined;
    let over = false;
    const finish = (t: Target | undefined, why?: string, answer?: Buffer) => {
      if (over) return;
      over = true;
      clearTimeout(timer);
      client.off("data", onData);
      client.off("end", onEnd);
      client.pause();
      if (why) rec.error = why;
      if (answer) client.end(answer);
      else if (!t) client.destroy();
      resolve(t);
    };
    const timer = setTimeout(() => {
      rec.rule = "net:handshake-timeout";
      finish(undefined, `no complete request within ${timeoutMs} ms`);
    }, timeoutMs);
    const onEnd = () => finish(undefined, "the client closed before naming a host");
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (socks === undefined && buf[0] === 5) socks = "greeting";
      if (socks === undefined) return http();
      if (socks === "greeting") {
        const g = parseSocksGreeting(buf);
        if (g.kind === "incomplete") return;
        if (g.kind === "bad") return finish(undefined, g.why, socksReply(g.reply));
        if (!g.noAuth)
          return finish(undefined, "SOCKS client offers no method without authentication", SOCKS_NO_METHOD);
        client.write(SOCKS_NO_AUTH);
        buf = buf.subarray(g.consumed);
        socks = "request";
      }
      const q = parseSocksRequest(buf);
      if (q.kind === "incomplete") return tooLong();
      if (q.kind === "bad") return finish(undefined, q.why, socksReply(q.reply));
      finish({
        raw: q.host,
        port: q.port,
        rest: Buffer.from(buf.subarray(q.consumed)),
        reply: (ok, _why, status) => client.write(socksReply(ok ? SOCKS.SUCCEEDED : SOCKS_FOR[status])),
      });
    };
    const tooLong = () => {
      if (buf.length > MAX_HEAD_BYTES)
        finish(
          undefined,
          "request over 16 KiB",
          socks ? socksReply(SOCKS.GENERAL_FAILURE) : httpRefusal(400, "request head over 16 KiB"),
        );
    };
    const http = () => {
      const h = parseHttpProxyHead(buf);
      if (h.kind === "incomplete") return;
      if (h.kind === "bad") return finish(undefined, h.why, httpRefusal(400, h.why));
      finish({
        raw: h.host,
        port: h.port,
        ...(h.kind === "forward" ? { head: h.head } : {}),
        rest: h.rest,
        reply: (ok, why, status) => {
          if (!ok) client.write(httpRefusal(status, why));
          else if (h.kind === "connect") client.write(CONNECT_OK);
        },
      });
    };
    client.on("data", onData);
    client.on("end", onEnd);
  });
}
