import * as grpc from "@grpc/grpc-js";
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
import { RpcError, Status } from "./errors.js";
import { clientError, seconds } from "./grpc-call-error.js";
import { waitForPeer } from "./peer-wait.js";
import type { BidiCall, CallOptions, ServiceClient } from "./service-client.js";

// The client half of the gRPC adapter, for the daemons and the CLI alike: a
// typed client for any generated protobuf-es service over a Unix socket, on
// grpc-js, with RpcError (status, typed details, cause) for every failure.

/**
 * How long calls may wait for their daemon; a call's own timeoutMs comes
 * first. Each one left out is no limit, as for the daemons' long-lived
 * channels, whose calls legitimately wait (a command that runs for minutes).
 * A process a person waits on (the CLI) sets all of them: a daemon that
 * accepts the connection and never answers must not hang it.
 */
export interface ClientOptions<T extends GenServiceMethods = GenServiceMethods> {
  /** The deadline of a unary call made without timeoutMs. */
  unaryTimeoutMs?: number;
  /**
   * A streaming call whose reply headers have not come by then fails
   * DEADLINE_EXCEEDED. This is what bounds a streaming call, which has no
   * deadline: once the headers are there, it may run for hours.
   */
  headersTimeoutMs?: number;
  /** Per method: its own unary deadline or headers time; 0 means none (a call that legitimately waits). */
  methods?: { [K in keyof T]?: { timeoutMs?: number; headersTimeoutMs?: number } };
  /** The peer must have sent its HTTP/2 settings this soon, or a call not made with waitForReady fails UNAVAILABLE. */
  connectTimeoutMs?: number;
  /**
   * Daemon-to-daemon: a call (one not made with `waitForReady: false`) first
   * waits this long, within its deadline, for a peer that is not connected,
   * instead of failing while the channel is in reconnect backoff after the
   * peer restarted. Nothing is sent before the connection is there, so this
   * is safe for every call. Left out (the CLI): a call fails at once.
   */
  peerWaitMs?: number;
  /** The peer's name in errors ("inferproxy"); the socket path is named as well. */
  peer?: string;
}

interface CallLimits {
  /** Milliseconds for a unary call made without timeoutMs; undefined: none. */
  timeoutMs: number | undefined;
  /** Milliseconds until a stream's reply headers; undefined: none. */
  headersTimeoutMs: number | undefined;
}

const limit = (ms: number | undefined) => (ms ? ms : undefined);
const cancelled = () => new RpcError(Status.CANCELLED, "cancelled on the client");

function limitsOf(m: DescMethod, options: ClientOptions): CallLimits {
  const own = (options.methods as Record<string, { timeoutMs?: number; headersTimeoutMs?: number }> | undefined)?.[
    m.localName
  ];
  return {
    timeoutMs: m.methodKind === "unary" ? limit(own?.timeoutMs ?? options.unaryTimeoutMs) : undefined,
    // A unary reply's headers come with the reply: its deadline is its bound.
    headersTimeoutMs:
      m.methodKind === "server_streaming" ? limit(own?.headersTimeoutMs ?? options.headersTimeoutMs) : undefined,
  };
}

function callMetadata(opts?: CallOptions): grpc.Metadata {
  const md = new grpc.Metadata();
  if (opts?.waitForReady) md.setOptions({ waitForReady: true });
  return md;
}

/** A typed client for a protobuf-es service over a Unix socket. */
export function createClient<T extends GenServiceMethods>(
  svc: GenService<T>,
  socketPath: string,
  options: ClientOptions<T> = {},
): ServiceClient<T> {
  const raw = new grpc.Client(`unix://${socketPath}`, grpc.credentials.createInsecure(), {
    // One channel per peer daemon; keep it alive so the first call after idle is not a reconnect.
    "grpc.keepalive_time_ms": 60_000,
    // A peer on the same machine comes back within seconds of a restart; do not
    // let the default backoff (up to 2 minutes) keep the channel down after it.
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 2_000,
    "grpc.max_receive_message_length": 64 * 1024 * 1024,
    "grpc.max_send_message_length": 64 * 1024 * 1024,
    // No retry policy is configured and no channelz service is served: with both off, grpc-js
    // neither prepares each call for a retry nor keeps channelz records of it.
    "grpc.enable_retries": 0,
    "grpc.enable_channelz": 0,
  });
  const connectedOnly = connectedWithin(raw, socketPath, options.connectTimeoutMs);
  const peer = { name: options.peer ?? "the daemon", socketPath };
  const peerWaitMs = options.peerWaitMs;
  /** Before a call: the peer is waited for (daemon-to-daemon), then the connection must have spoken (the CLI). */
  const connected = async (opts: CallOptions | undefined, deadline: number | undefined) => {
    if (peerWaitMs && opts?.waitForReady !== false) await waitForPeer(raw, peer, peerWaitMs, deadline, opts?.signal);
    await connectedOnly(opts, deadline);
  };
  const client: Record<string, unknown> = {
    close: () => raw.close(),
    waitForReady: (timeoutMs: number, signal?: AbortSignal) => waitForPeer(raw, peer, timeoutMs, undefined, signal),
  };
  for (const m of svc.methods as DescMethod[]) {
    const path = `/${svc.typeName}/${m.name}`;
    const limits = limitsOf(m, options as ClientOptions);
    const serialize = (v: MessageShape<DescMessage>) => Buffer.from(toBinary(m.input, v));
    const deserialize = (b: Buffer) => fromBinary(m.output, b);
    /** The call's deadline and what an error says of it; a request that cannot be built fails here, before anything is sent. */
    const begin = (opts: CallOptions | undefined, timeoutMs: number | undefined) => {
      if (opts?.signal?.aborted) throw cancelled();
      const deadline = timeoutMs ? Date.now() + timeoutMs : undefined;
      const callOptions: grpc.CallOptions = deadline !== undefined ? { deadline } : {};
      return { about: { method: m.name, socketPath, peer: peer.name, deadline, timeoutMs }, callOptions };
    };
    if (m.methodKind === "bidi_streaming") {
      client[m.localName] = (opts?: CallOptions) => {
        const { about, callOptions } = begin(opts, opts?.timeoutMs);
        const call = raw.makeBidiStreamRequest(path, serialize, deserialize, callMetadata(opts), callOptions);
        return bidiCall(call, m, responsesOf(call, opts?.signal, about, undefined));
      };
    } else if (m.methodKind === "unary") {
      client[m.localName] = async (req: MessageInitShape<DescMessage>, opts?: CallOptions) => {
        const request = create(m.input, req);
        const { about, callOptions } = begin(opts, opts?.timeoutMs || limits.timeoutMs);
        await connected(opts, about.deadline);
        return new Promise((resolve, reject) => {
          const signal = opts?.signal;
          const onAbort = () => call.cancel();
          const call = raw.makeUnaryRequest(
            path,
            serialize,
            deserialize,
            request,
            callMetadata(opts),
            callOptions,
            (err, res) => {
              signal?.removeEventListener("abort", onAbort);
              if (err) reject(signal?.aborted ? cancelled() : clientError(err, about));
              else resolve(res);
            },
          );
          signal?.addEventListener("abort", onAbort, { once: true });
        });
      };
    } else if (m.methodKind === "server_streaming") {
      client[m.localName] = (req: MessageInitShape<DescMessage>, opts?: CallOptions) => ({
        async *[Symbol.asyncIterator]() {
          const request = create(m.input, req);
          const { about, callOptions } = begin(opts, opts?.timeoutMs);
          await connected(opts, about.deadline);
          const call = raw.makeServerStreamRequest(
            path,
            serialize,
            deserialize,
            request,
            callMetadata(opts),
            callOptions,
          );
          yield* responsesOf(call, opts?.signal, about, limits.headersTimeoutMs);
        },
      });
    } else {
      client[m.localName] = () => {
        throw new RpcError(Status.UNIMPLEMENTED, `${m.name}: client-streaming calls are not supported`);
      };
    }
  }
  return client as ServiceClient<T>;
}

/**
 * Waits, before a call, until the channel has a connection whose peer spoke
 * HTTP/2, for at most `connectTimeoutMs`. grpc-js counts a connection as made
 * only once the peer's settings came, and keeps a call waiting for that
 * until the call's deadline: a socket that accepts and then says nothing (a
 * hung daemon, something else bound to the path) would be reported as a late
 * reply instead of as what it is. A call with waitForReady waits as long as
 * its deadline allows; a peer that is not there fails the call at once, as
 * grpc-js fails it.
 */
function connectedWithin(raw: grpc.Client, socketPath: string, connectTimeoutMs: number | undefined) {
  return async (opts: CallOptions | undefined, deadline: number | undefined): Promise<void> => {
    if (!connectTimeoutMs || opts?.waitForReady) return;
    const channel = raw.getChannel();
    let state = channel.getConnectivityState(true);
    const started = Date.now();
    const until = Math.min(started + connectTimeoutMs, deadline ?? Number.POSITIVE_INFINITY);
    const signal = opts?.signal;
    while (state === grpc.connectivityState.IDLE || state === grpc.connectivityState.CONNECTING) {
      const changed = await new Promise<boolean | "aborted">((resolve) => {
        const onAbort = () => resolve("aborted");
        signal?.addEventListener("abort", onAbort, { once: true });
        channel.watchConnectivityState(state, until, (err) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(!err);
        });
      });
      if (changed === "aborted") throw cancelled();
      if (!changed) break;
      state = channel.getConnectivityState(false);
    }
    // Still not spoken when the wait ended: the connection is what failed, whether the connect
    // window or the call's own (equal or earlier, by the few ms between them) deadline ended it.
    if (
      (state === grpc.connectivityState.CONNECTING || state === grpc.connectivityState.IDLE) &&
      Date.now() >= until - 5
    )
      throw new RpcError(
        Status.UNAVAILABLE,
        `cannot reach ${socketPath}: it accepted the connection but sent no HTTP/2 settings within ${seconds(connectTimeoutMs)}`,
      );
  };
}

function bidiCall(
  call: grpc.ClientDuplexStream<MessageShape<DescMessage>, MessageShape<DescMessage>>,
  m: DescMethod,
  responses: AsyncGenerator<MessageShape<DescMessage>>,
): BidiCall<DescMessage, DescMessage> {
  // Failures reach the caller through the iteration; a write racing a broken call must not
  // raise an 'error' nobody listens to any more.
  call.on("error", () => undefined);
  return {
    send: (req) => call.write(create(m.input, req)),
    end: () => call.end(),
    cancel: () => call.cancel(),
    [Symbol.asyncIterator]: () => responses,
  };
}

/**
 * A call's responses: a signal that aborts cancels the call, a failure comes
 * out as an RpcError, a stream whose reply headers do not come within
 * `headersTimeoutMs` is given up, and leaving the loop early (break/return)
 * cancels the server side too.
 */
async function* responsesOf(
  call: AsyncIterable<unknown> & { cancel(): void; once(event: "metadata", fn: () => void): unknown },
  signal: AbortSignal | undefined,
  about: Parameters<typeof clientError>[1],
  headersTimeoutMs: number | undefined,
): AsyncGenerator<MessageShape<DescMessage>> {
  let stoppedBy: "cancel" | "headers" | undefined;
  const stop = (why: "cancel" | "headers") => {
    stoppedBy ??= why;
    call.cancel();
  };
  const onAbort = () => stop("cancel");
  signal?.addEventListener("abort", onAbort, { once: true });
  const headersTimer =
    headersTimeoutMs !== undefined && (about.deadline === undefined || Date.now() + headersTimeoutMs < about.deadline)
      ? setTimeout(() => stop("headers"), headersTimeoutMs)
      : undefined;
  call.once("metadata", () => clearTimeout(headersTimer));
  try {
    for await (const ev of call) yield ev as MessageShape<DescMessage>;
  } catch (err) {
    if (stoppedBy === "cancel") throw cancelled();
    if (stoppedBy === "headers")
      throw new RpcError(
        Status.DEADLINE_EXCEEDED,
        `${about.method}: deadline exceeded: ${about.socketPath} did not answer within ${seconds(headersTimeoutMs ?? 0)}`,
      );
    throw clientError(err, about);
  } finally {
    clearTimeout(headersTimer);
    signal?.removeEventListener("abort", onAbort);
    call.cancel();
  }
}
