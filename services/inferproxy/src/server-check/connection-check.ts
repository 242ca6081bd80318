import type { Socket } from "node:net";
import type { buildConnector } from "undici";
import { messageOf } from "@boxmaker/common";

export interface RawResponse {
  status: number;
  body: string;
  /** The server said `Connection: close`: the socket cannot be kept for requests. */
  closes?: boolean;
}

/**
 * One `GET path` written straight onto a freshly connected socket, before
 * undici owns it. The socket is left paused with no listeners and nothing
 * unread, ready for keep-alive reuse; any failure destroys it.
 */
export function rawGet(socket: Socket, host: string, path: string, timeoutMs: number): Promise<RawResponse> {
  return new Promise<RawResponse>((resolve, reject) => {
    let buf: Buffer = Buffer.alloc(0);
    let settled = false;
    const timer = setTimeout(
      () => finish(new Error(`GET ${path} on a new connection took longer than ${timeoutMs} ms`)),
      timeoutMs,
    );
    const onData = (b: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, b]) : b;
      try {
        const r = parse();
        if (r) finish(undefined, r);
      } catch (err) {
        finish(asError(err));
      }
    };
    const onEnd = () => finish(new Error(`llama-server closed the connection before answering GET ${path}`));
    const onError = (err: Error) => finish(err);
    function finish(err: Error | undefined, res?: RawResponse): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.off("close", onEnd);
      socket.off("error", onError);
      socket.pause();
      if (err) {
        socket.destroy();
        reject(err);
      } else resolve(res!);
    }
    function parse(): RawResponse | undefined {
      const he = buf.indexOf("\r\n\r\n");
      if (he < 0) return undefined;
      const lines = buf.subarray(0, he).toString("latin1").split("\r\n");
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "");
      if (!m) throw new Error(`not an HTTP response to GET ${path}: ${JSON.stringify(lines[0]?.slice(0, 80))}`);
      const headers = new Map<string, string>();
      for (const l of lines.slice(1)) {
        const i = l.indexOf(":");
        if (i > 0) headers.set(l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim());
      }
      const rest = buf.subarray(he + 4);
      let body: Buffer;
      let extra: Buffer;
      if (/chunked/i.test(headers.get("transfer-encoding") ?? "")) {
        const parts: Buffer[] = [];
        let at = 0;
        for (;;) {
          const le = rest.indexOf("\r\n", at);
          if (le < 0) return undefined;
          const size = parseInt(rest.subarray(at, le).toString("latin1"), 16);
          if (!Number.isFinite(size)) throw new Error(`bad chunk size in the answer to GET ${path}`);
          if (size === 0) {
            // No trailers: the last chunk is "0\r\n\r\n".
            if (rest.length < le + 4) return undefined;
            body = Buffer.concat(parts);
            extra = rest.subarray(le + 4);
            break;
          }
          if (rest.length < le + 2 + size + 2) return undefined;
          parts.push(rest.subarray(le + 2, le + 2 + size));
          at = le + 2 + size + 2;
        }
      } else {
        const cl = Number(headers.get("content-length"));
        if (!Number.isInteger(cl) || cl < 0) throw new Error(`the answer to GET ${path} has no Content-Length`);
        if (rest.length < cl) return undefined;
        body = rest.subarray(0, cl);
        extra = rest.subarray(cl);
      }
      if (extra.length > 0) throw new Error(`llama-server sent more than the answer to GET ${path}`);
      const status = Number(m[1]);
      // Kept, not thrown: a loading llama-server's 503 may close, and that answer
      // still says "loading", which the check must see rather than "cannot connect".
      if (/close/i.test(headers.get("connection") ?? "")) return { status, body: body.toString("utf8"), closes: true };
      return { status, body: body.toString("utf8") };
    }
    socket.on("data", onData);
    socket.on("end", onEnd);
    socket.on("close", onEnd);
    socket.on("error", onError);
    socket.resume();
    socket.write(`GET ${path} HTTP/1.1\r\nhost: ${host}\r\naccept: application/json\r\n\r\n`);
  });
}

/**
 * An undici connector that checks every new connection before any request
 * uses it: `check` gets the server's answer to `GET /props` on that very
 * connection and throws to refuse it. A restarted llama-server can only be
 * reached through a new connection, so nothing is ever sent to a server that
 * has not been checked, however briefly it was gone.
 */
export function checkingConnector(
  base: buildConnector.connector,
  check: (res: RawResponse) => void,
  timeoutMs: number,
): buildConnector.connector {
  return (opts, callback) => {
    base(opts, (err, socket) => {
      if (err || !socket) return callback(err ?? new Error("no socket"), null);
      rawGet(socket as Socket, opts.host ?? opts.hostname ?? "llama-server", "/props", timeoutMs).then(
        (res) => {
          const closes = new Error("llama-server closes the connection after GET /props");
          try {
            // A closing 503 is still the check's to read (loading); any other closing answer is refused unread.
            if (res.closes && res.status !== 503) throw closes;
            check(res);
            if (res.closes) throw closes;
          } catch (e) {
            socket.destroy();
            return callback(asError(e), null);
          }
          callback(null, socket);
        },
        (e: unknown) => callback(asError(e), null),
      );
    });
  };
}

/** undici's connector callback and a promise's reject want an Error; a thrown non-Error keeps its text. */
function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(messageOf(e));
}
