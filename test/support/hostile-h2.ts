import { connect, type ClientHttp2Session, type IncomingHttpHeaders } from "node:http2";
import { createConnection } from "node:net";
import { randomBytes } from "node:crypto";

/**
 * A local client that speaks gRPC badly on purpose, over a daemon's Unix
 * socket: frames that lie about their length, bodies that do not decode,
 * methods that do not exist, streams that never end. Each attempt resolves
 * to what came back (a grpc-status, an HTTP status, or how the connection
 * ended) and never rejects: the daemon's answer is the test's to judge.
 */
export type Outcome = { grpcStatus?: number; httpStatus?: number; ended?: string };

const session = (socket: string): ClientHttp2Session => {
  const s = connect("http://localhost", { createConnection: () => createConnection(socket) });
  s.on("error", () => undefined);
  return s;
};

/** A gRPC length-prefixed frame; `declared` lies about the length when given. */
export function frame(body: Uint8Array, opts: { declared?: number; compressed?: boolean } = {}): Buffer {
  const head = Buffer.alloc(5);
  head[0] = opts.compressed ? 1 : 0;
  head.writeUInt32BE(opts.declared ?? body.length, 1);
  return Buffer.concat([head, body]);
}

/** One request with the given path, headers and body; resolves with the ending it got. */
export function rawCall(
  socket: string,
  path: string,
  body: Uint8Array,
  opts: { contentType?: string; timeoutMs?: number; extraHeaders?: Record<string, string> } = {},
): Promise<Outcome> {
  return new Promise((resolve) => {
    const s = session(socket);
    const out: Outcome = {};
    let head: IncomingHttpHeaders | undefined;
    const done = (ended?: string) => {
      clearTimeout(timer);
      if (ended && out.grpcStatus === undefined) out.ended = ended;
      s.destroy();
      resolve(out);
    };
    const timer = setTimeout(() => done("no answer"), opts.timeoutMs ?? 30_000);
    const req = s.request({
      ":method": "POST",
      ":path": path,
      "content-type": opts.contentType ?? "application/grpc+proto",
      te: "trailers",
      ...opts.extraHeaders,
    });
    req.on("response", (h) => {
      head = h;
      out.httpStatus = Number(h[":status"]);
      if (h["grpc-status"] !== undefined) out.grpcStatus = Number(h["grpc-status"]);
    });
    req.on("trailers", (t) => {
      if (t["grpc-status"] !== undefined) out.grpcStatus = Number(t["grpc-status"]);
    });
    req.on("data", () => undefined);
    req.on("end", () => done(head ? undefined : "ended without headers"));
    req.on("error", (e: NodeJS.ErrnoException) => done(e.code ?? e.message));
    req.on("close", () => done(`closed (rst ${req.rstCode})`));
    req.end(body);
  });
}

/** Bytes that are not HTTP/2 at all, then close; resolves when the daemon has closed or answered. */
export function garbage(socket: string, bytes: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const c = createConnection(socket);
    const timer = setTimeout(() => {
      c.destroy();
      resolve({ ended: "no answer" });
    }, 30_000);
    c.on("error", () => undefined);
    c.on("close", () => {
      clearTimeout(timer);
      resolve({ ended: "closed" });
    });
    c.on("data", () => undefined);
    c.end(randomBytes(bytes));
  });
}

/**
 * `n` streams on one connection that send their headers and half a frame,
 * then nothing: the daemon holds them until the connection goes, which this
 * does after `holdMs`.
 */
export async function hangingStreams(socket: string, path: string, n: number, holdMs: number): Promise<Outcome> {
  const s = session(socket);
  const cap = Math.min(n, s.remoteSettings?.maxConcurrentStreams ?? n);
  for (let i = 0; i < cap; i++) {
    const req = s.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc+proto",
      te: "trailers",
    });
    req.on("error", () => undefined);
    req.write(frame(new Uint8Array(10), { declared: 100 }));
  }
  await new Promise((r) => setTimeout(r, holdMs));
  s.destroy();
  return { ended: "held" };
}

/** The HTTP/2 stream-level attempts each daemon gets, by kind (a unary method of its service). */
export function malformedKinds(socket: string, unaryPath: string): Array<[string, () => Promise<Outcome>]> {
  return [
    ["frame declaring 4 GiB", () => rawCall(socket, unaryPath, frame(new Uint8Array(16), { declared: 0xffffffff }))],
    ["frame cut short", () => rawCall(socket, unaryPath, frame(new Uint8Array(10), { declared: 100 }))],
    ["body that does not decode", () => rawCall(socket, unaryPath, frame(randomBytes(4096)))],
    ["compressed flag, no encoding", () => rawCall(socket, unaryPath, frame(randomBytes(64), { compressed: true }))],
    [
      "two frames to a unary method",
      () => rawCall(socket, unaryPath, Buffer.concat([frame(new Uint8Array()), frame(new Uint8Array())])),
    ],
    ["unknown method", () => rawCall(socket, "/boxmaker.v1.Nope/Nothing", frame(new Uint8Array()))],
    ["wrong content-type", () => rawCall(socket, unaryPath, frame(new Uint8Array()), { contentType: "text/plain" })],
    [
      "200 kB header",
      () => rawCall(socket, unaryPath, frame(new Uint8Array()), { extraHeaders: { "x-junk": "h".repeat(200_000) } }),
    ],
    [
      "65 MiB message",
      () => rawCall(socket, unaryPath, frame(Buffer.alloc(65 * 1024 * 1024, 0x0a)), { timeoutMs: 60_000 }),
    ],
    ["not HTTP/2 at all", () => garbage(socket, 64 * 1024)],
    ["100 streams left hanging", () => hangingStreams(socket, unaryPath, 100, 500)],
  ];
}
