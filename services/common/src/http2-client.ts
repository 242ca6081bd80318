import { connect as connectHttp2, constants, type ClientHttp2Session, type IncomingHttpHeaders } from "node:http2";
import { createConnection } from "node:net";
import { setTimeout as delayFor } from "node:timers/promises";
import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type DescMethod,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import { backoffDelay } from "./backoff.js";
import { RpcError } from "./errors.js";
import { encodeFrame, FrameError, FrameReader } from "./grpc-frames.js";
import type { CallOptions, ServiceClient } from "./service-client.js";
import { Status } from "./status.js";

// The same typed client as grpc-client.ts, speaking gRPC on node:http2
// itself. It is for short-lived processes (the CLI): one connection to one
// daemon on a Unix socket needs none of grpc-js's channel machinery (name
// resolution, load balancing, retries, keepalive), and loading and first
// running that machinery was ~20 ms of every `boxmaker` command. Unary and
// server-streaming calls only; the daemons talk to each other with grpc-js.

const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
// A daemon that accepts the connection but never answers must not hang its
// caller: every unary call has a deadline, every call a time by which the
// reply's headers must have come, and a connection a time by which the peer
// must have spoken HTTP/2 at all. Generous, since the daemons are local and
// answer in milliseconds when they answer.
const DEFAULT_UNARY_TIMEOUT_MS = 30_000;
const DEFAULT_HEADERS_TIMEOUT_MS = 30_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
// As the daemons' grpc-js channels back off (grpc-client.ts).
const RECONNECT_BACKOFF = { initialMs: 100, maxMs: 2_000 };

/** gRPC's mapping of an HTTP/2 RST_STREAM code to a status (PROTOCOL-HTTP2.md). */
const RST_STATUS: Record<number, Status> = {
  [constants.NGHTTP2_REFUSED_STREAM]: Status.UNAVAILABLE,
  [constants.NGHTTP2_CANCEL]: Status.CANCELLED,
  [constants.NGHTTP2_ENHANCE_YOUR_CALM]: Status.RESOURCE_EXHAUSTED,
  [constants.NGHTTP2_INADEQUATE_SECURITY]: Status.PERMISSION_DENIED,
};

/** gRPC's mapping of an HTTP status to a status, for replies without grpc-status (http-grpc-status-mapping.md). */
function httpStatus(code: number): Status {
  if (code === 400) return Status.INTERNAL;
  if (code === 401) return Status.UNAUTHENTICATED;
  if (code === 403) return Status.PERMISSION_DENIED;
  if (code === 404) return Status.UNIMPLEMENTED;
  if (code === 429 || code === 502 || code === 503 || code === 504) return Status.UNAVAILABLE;
  return Status.UNKNOWN;
}

/** How long calls may wait for their daemon; a call's own timeoutMs comes first. */
export interface Http2ClientOptions<T extends GenServiceMethods = GenServiceMethods> {
  /** The deadline of a unary call made without timeoutMs (default 30 s). */
  unaryTimeoutMs?: number;
  /**
   * A streaming call whose reply headers have not come by then fails
   * DEADLINE_EXCEEDED (default 30 s). This is what bounds a streaming call,
   * which has no deadline: once the headers are there, it may run for hours.
   */
  headersTimeoutMs?: number;
  /** Per method: its own unary deadline or headers time; 0 means none (a call that legitimately waits). */
  methods?: { [K in keyof T]?: { timeoutMs?: number; headersTimeoutMs?: number } };
  /** The peer must send its HTTP/2 settings this soon after accepting the connection (default 10 s). */
  connectTimeoutMs?: number;
}

interface CallLimits {
  /** Milliseconds for the whole call; undefined: none. */
  timeoutMs: number | undefined;
  /** Milliseconds until the reply's headers; undefined: none. */
  headersTimeoutMs: number | undefined;
}

const limit = (ms: number | undefined) => (ms ? ms : undefined);

/** A typed client for a protobuf-es service over a Unix socket, on node:http2 alone. */
export function createHttp2Client<T extends GenServiceMethods>(
  svc: GenService<T>,
  socketPath: string,
  options: Http2ClientOptions<T> = {},
): ServiceClient<T> {
  const conn = new Connection(socketPath, options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS);
  const limitsOf = (m: DescMethod): CallLimits => {
    const own = (options.methods as Record<string, { timeoutMs?: number; headersTimeoutMs?: number }> | undefined)?.[
      m.localName
    ];
    return {
      timeoutMs:
        m.methodKind === "unary"
          ? limit(own?.timeoutMs ?? options.unaryTimeoutMs ?? DEFAULT_UNARY_TIMEOUT_MS)
          : undefined,
      // A unary reply's headers come with the reply: its deadline is its bound.
      headersTimeoutMs:
        m.methodKind === "server_streaming"
          ? limit(own?.headersTimeoutMs ?? options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS)
          : undefined,
    };
  };
  const client: Record<string, unknown> = {
    close: () => conn.close(),
    waitForReady: async (timeoutMs: number) => {
      await conn.open({ waitForReady: true, deadline: Date.now() + timeoutMs });
    },
  };
  for (const m of svc.methods as DescMethod[]) {
    const path = `/${svc.typeName}/${m.name}`;
    const limits = limitsOf(m);
    if (m.methodKind === "unary") {
      client[m.localName] = async (req: MessageInitShape<DescMessage>, opts?: CallOptions) => {
        let reply: MessageShape<DescMessage> | undefined;
        for await (const r of call(conn, path, m, req, opts, limits)) {
          if (reply) throw new RpcError(Status.INTERNAL, `${m.name}: the server sent more than one reply`);
          reply = r;
        }
        if (!reply) throw new RpcError(Status.INTERNAL, `${m.name}: the server sent no reply`);
        return reply;
      };
    } else if (m.methodKind === "server_streaming") {
      client[m.localName] = (req: MessageInitShape<DescMessage>, opts?: CallOptions) => ({
        [Symbol.asyncIterator]: () => call(conn, path, m, req, opts, limits),
      });
    } else {
      client[m.localName] = () => {
        throw new RpcError(Status.UNIMPLEMENTED, `${m.name}: this client makes unary and server-streaming calls only`);
      };
    }
  }
  return client as ServiceClient<T>;
}

/**
 * One call: the request goes out whole, the replies come back as the
 * caller reads them (the stream's own flow control holds the server back
 * meanwhile). Leaving the loop early, the signal and the deadline all reset
 * the stream, which the server's handler sees as a cancel.
 */
async function* call(
  conn: Connection,
  path: string,
  m: DescMethod,
  req: MessageInitShape<DescMessage>,
  opts: CallOptions | undefined,
  limits: CallLimits,
): AsyncGenerator<MessageShape<DescMessage>> {
  const signal = opts?.signal;
  if (signal?.aborted) throw cancelled();
  // A request that cannot be encoded fails here, before anything is sent.
  const request = encodeFrame(toBinary(m.input, create(m.input, req)));
  const timeoutMs = opts?.timeoutMs || limits.timeoutMs;
  const deadline = timeoutMs ? Date.now() + timeoutMs : undefined;
  const session = await conn.open({ waitForReady: !!opts?.waitForReady, deadline, signal });
  const headers: Record<string, string> = {
    ":method": "POST",
    ":path": path,
    "content-type": "application/grpc+proto",
    te: "trailers",
    "grpc-accept-encoding": "identity",
    "user-agent": "boxmaker-http2-client",
  };
  if (deadline !== undefined) headers["grpc-timeout"] = grpcTimeout(deadline - Date.now());
  let stream: ReturnType<ClientHttp2Session["request"]>;
  try {
    stream = session.request(headers);
  } catch (err) {
    // The session began closing since it was opened (the daemon is going away).
    throw new RpcError(Status.UNAVAILABLE, `the connection to ${conn.socketPath} is closing`, {}, { cause: err });
  }
  let stoppedBy: Stop | undefined;
  const stop = (why: Stop) => {
    if (stream.closed) return;
    stoppedBy ??= why;
    stream.close(constants.NGHTTP2_CANCEL);
  };
  const onAbort = () => stop("cancel");
  signal?.addEventListener("abort", onAbort, { once: true });
  if (signal?.aborted) onAbort();
  const timer = deadline !== undefined ? setTimeout(() => stop("deadline"), deadline - Date.now()) : undefined;
  // Only when it would come before the deadline; cleared by the headers.
  const headersTimer =
    limits.headersTimeoutMs !== undefined && (deadline === undefined || Date.now() + limits.headersTimeoutMs < deadline)
      ? setTimeout(() => stop("headers"), limits.headersTimeoutMs)
      : undefined;
  let head: IncomingHttpHeaders | undefined;
  let trailers: IncomingHttpHeaders | undefined;
  stream.on("response", (h) => {
    head = h;
    clearTimeout(headersTimer);
  });
  stream.on("trailers", (t) => (trailers = t));
  // Failures come out of the iteration below; nothing else listens.
  stream.on("error", () => undefined);
  const reader = new FrameReader(MAX_MESSAGE_BYTES);
  conn.hold();
  try {
    stream.end(request);
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        for (const bytes of reader.push(chunk)) yield decode(m, bytes);
      }
    } catch (err) {
      if (err instanceof RpcError) throw err;
      if (err instanceof FrameError) {
        const code = err.kind === "too_large" ? Status.RESOURCE_EXHAUSTED : Status.INTERNAL;
        throw new RpcError(code, `${m.name}: ${err.message}`);
      }
      if (stoppedBy) throw stoppedError(stoppedBy, m, conn.socketPath, timeoutMs, limits);
      throw lostError(stream.rstCode, session, conn.socketPath, err);
    }
    if (stoppedBy) throw stoppedError(stoppedBy, m, conn.socketPath, timeoutMs, limits);
    const ending = trailers ?? head;
    const raw = ending?.["grpc-status"];
    if (!ending || raw === undefined) {
      // The stream ended without a status: the daemon went away, or reset the call.
      if (session.destroyed || session.closed || stream.rstCode)
        throw lostError(stream.rstCode, session, conn.socketPath, undefined);
      const http = Number(head?.[":status"] ?? 0);
      if (http && http !== 200) throw new RpcError(httpStatus(http), `${m.name}: the server answered HTTP ${http}`);
      throw new RpcError(Status.INTERNAL, `${m.name}: the call ended without a status`);
    }
    const code = Number(first(raw)) as Status;
    if (code !== Status.OK) throw RpcError.fromTrailers(code, grpcMessage(ending), metadataOf(ending));
    if (reader.pendingBytes > 0) throw new RpcError(Status.INTERNAL, `${m.name}: the last reply was cut off`);
  } finally {
    clearTimeout(timer);
    clearTimeout(headersTimer);
    signal?.removeEventListener("abort", onAbort);
    if (!stream.closed) stream.close(constants.NGHTTP2_CANCEL);
    conn.release();
  }
}

function decode(m: DescMethod, bytes: Uint8Array): MessageShape<DescMessage> {
  try {
    return fromBinary(m.output, bytes);
  } catch (err) {
    throw new RpcError(Status.INTERNAL, `${m.name}: a reply that does not decode`, {}, { cause: err });
  }
}

/** The daemon's socket: one HTTP/2 session, opened on first use and again after it ends. */
class Connection {
  private session: ClientHttp2Session | undefined;
  private connecting: Promise<ClientHttp2Session> | undefined;
  private active = 0;
  private closed = false;

  constructor(
    readonly socketPath: string,
    private readonly connectTimeoutMs: number,
  ) {}

  /**
   * The open session. Without waitForReady a socket that does not accept is
   * UNAVAILABLE at once; with it, attempts repeat (backing off to 2 s) until
   * the deadline or the signal.
   */
  async open(opts: { waitForReady: boolean; deadline?: number | undefined; signal?: AbortSignal | undefined }) {
    for (let attempt = 0; ; attempt++) {
      if (this.closed) throw new RpcError(Status.CANCELLED, "the client was closed");
      try {
        return await this.attempt();
      } catch (err) {
        const unreachable = new RpcError(
          Status.UNAVAILABLE,
          `cannot reach ${this.socketPath}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        );
        if (!opts.waitForReady) throw unreachable;
        const delay = backoffDelay(RECONNECT_BACKOFF, attempt);
        const left = opts.deadline === undefined ? delay : opts.deadline - Date.now();
        if (left <= 0) throw new RpcError(Status.DEADLINE_EXCEEDED, "deadline exceeded", {}, { cause: unreachable });
        await delayFor(Math.min(delay, left), undefined, { signal: opts.signal }).catch(() => {
          throw cancelled();
        });
      }
    }
  }

  /** A call is running: the connection keeps the process alive. */
  hold(): void {
    this.active++;
    this.session?.ref();
  }

  /** A call ended: with none left, an idle connection does not keep the process alive. */
  release(): void {
    this.active--;
    if (this.active === 0) this.session?.unref();
  }

  close(): void {
    this.closed = true;
    this.session?.close();
    this.session = undefined;
  }

  private attempt(): Promise<ClientHttp2Session> {
    const s = this.session;
    if (s && !s.closed && !s.destroyed) return Promise.resolve(s);
    this.connecting ??= new Promise<ClientHttp2Session>((resolve, reject) => {
      const session = connectHttp2("http://localhost", {
        createConnection: () => createConnection(this.socketPath),
        settings: { enablePush: false },
      });
      // Open once the peer has spoken: a socket that accepts and then says
      // nothing (a hung daemon, something else bound to the path) would
      // otherwise take every call's request and never answer any.
      let connected = false;
      let spoke = false;
      let settled = false;
      const silent = setTimeout(() => {
        failed(
          new Error(`it accepted the connection but sent no HTTP/2 settings within ${seconds(this.connectTimeoutMs)}`),
        );
      }, this.connectTimeoutMs);
      const failed = (err: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(silent);
        session.destroy();
        reject(err);
      };
      const opened = () => {
        if (settled || !connected || !spoke) return;
        settled = true;
        clearTimeout(silent);
        session.off("error", failed);
        // Errors after this end the calls on the session, which report them.
        session.on("error", () => undefined);
        this.session = session;
        if (this.active === 0) session.unref();
        resolve(session);
      };
      session.once("error", failed);
      session.once("connect", () => {
        connected = true;
        opened();
      });
      session.once("remoteSettings", () => {
        spoke = true;
        opened();
      });
      const forget = () => {
        failed(new Error("it closed the connection"));
        if (this.session === session) this.session = undefined;
      };
      session.once("close", forget);
      session.once("goaway", forget);
    }).finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }
}

const cancelled = () => new RpcError(Status.CANCELLED, "cancelled on the client");

type Stop = "cancel" | "deadline" | "headers";

const seconds = (ms: number | undefined) => `${Math.round((ms ?? 0) / 100) / 10} s`;

/** What stopped the call, with the method, the daemon and the time it was given: one line a person can act on. */
function stoppedError(
  why: Stop,
  m: DescMethod,
  socketPath: string,
  timeoutMs: number | undefined,
  limits: CallLimits,
): RpcError {
  if (why === "cancel") return cancelled();
  const waited = why === "headers" ? limits.headersTimeoutMs : timeoutMs;
  return new RpcError(
    Status.DEADLINE_EXCEEDED,
    `${m.name}: deadline exceeded: ${socketPath} did not answer within ${seconds(waited)}`,
  );
}

/** A call that ended without a status: the connection went, or the server reset the call. */
function lostError(
  rstCode: number | undefined,
  session: ClientHttp2Session,
  socketPath: string,
  err: unknown,
): RpcError {
  if (session.destroyed || session.closed || !rstCode)
    return new RpcError(Status.UNAVAILABLE, `the connection to ${socketPath} was lost`, {}, { cause: err });
  return new RpcError(RST_STATUS[rstCode] ?? Status.INTERNAL, `the server reset the call (HTTP/2 code ${rstCode})`);
}

/** grpc-timeout: at most eight digits, so long deadlines go in seconds. */
function grpcTimeout(ms: number): string {
  const n = Math.max(1, Math.ceil(ms));
  return n <= 99_999_999 ? `${n}m` : `${Math.min(99_999_999, Math.ceil(n / 1000))}S`;
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** grpc-message is percent-encoded (a server may also send it plain). */
function grpcMessage(h: IncomingHttpHeaders): string {
  const raw = first(h["grpc-message"]) ?? "";
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function metadataOf(h: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    const value = first(v);
    if (!k.startsWith(":") && value !== undefined) out[k] = value;
  }
  return out;
}
