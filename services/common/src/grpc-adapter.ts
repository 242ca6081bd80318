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
import { RpcError, Status, toRpcError } from "./errors.js";

/** What a handler learns about its call besides the request. */
export interface CallContext {
  /** Aborted when the client cancels, the deadline passes or the server is forced down. */
  readonly signal: AbortSignal;
  readonly metadata: grpc.Metadata;
}

type UnaryHandler<I extends DescMessage, O extends DescMessage> = (
  req: MessageShape<I>,
  ctx: CallContext,
) => Promise<MessageInitShape<O>> | MessageInitShape<O>;

type StreamHandler<I extends DescMessage, O extends DescMessage> = (
  req: MessageShape<I>,
  ctx: CallContext,
) => AsyncIterable<MessageInitShape<O>>;

type Handler<M> = M extends {
  methodKind: "unary";
  input: infer I extends DescMessage;
  output: infer O extends DescMessage;
}
  ? UnaryHandler<I, O>
  : M extends {
        methodKind: "server_streaming";
        input: infer I extends DescMessage;
        output: infer O extends DescMessage;
      }
    ? StreamHandler<I, O>
    : never;

/** The implementation of a protobuf-es service: one function per method, keyed by its local name. */
export type ServiceImpl<T extends GenServiceMethods> = { [K in keyof T]: Handler<T[K]> };

/** The implementation type for a generated service constant, e.g. `ImplOf<typeof InferService>`. */
export type ImplOf<S> = S extends GenService<infer T> ? ServiceImpl<T> : never;
/** The client type for a generated service constant. */
export type ClientOf<S> = S extends GenService<infer T> ? ServiceClient<T> : never;

export interface CallOptions {
  signal?: AbortSignal;
  /** Milliseconds from now. */
  timeoutMs?: number;
  /**
   * Queue the call until the peer daemon is reachable (bounded by timeoutMs)
   * instead of failing at once while it restarts. For idempotent calls only.
   */
  waitForReady?: boolean;
}

type ClientMethod<M> = M extends {
  methodKind: "unary";
  input: infer I extends DescMessage;
  output: infer O extends DescMessage;
}
  ? (req: MessageInitShape<I>, opts?: CallOptions) => Promise<MessageShape<O>>
  : M extends {
        methodKind: "server_streaming";
        input: infer I extends DescMessage;
        output: infer O extends DescMessage;
      }
    ? (req: MessageInitShape<I>, opts?: CallOptions) => AsyncIterable<MessageShape<O>>
    : never;

export type ServiceClient<T extends GenServiceMethods> = { [K in keyof T]: ClientMethod<T[K]> } & {
  close(): void;
  /** Resolves once the channel is connected (or rejects after timeoutMs). */
  waitForReady(timeoutMs: number): Promise<void>;
};

/** One grpc-js definition from a protobuf-es descriptor: the only per-service glue there is. */
export function serviceDefinition(svc: GenService<GenServiceMethods>): grpc.ServiceDefinition {
  const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const m of svc.methods) {
    if (m.methodKind !== "unary" && m.methodKind !== "server_streaming") {
      throw new Error(`${svc.typeName}.${m.name}: ${m.methodKind} methods are not supported`);
    }
    def[m.localName] = {
      path: `/${svc.typeName}/${m.name}`,
      requestStream: false,
      responseStream: m.methodKind === "server_streaming",
      requestSerialize: (v: MessageShape<DescMessage>) => Buffer.from(toBinary(m.input, v)),
      requestDeserialize: (b: Buffer) => fromBinary(m.input, b),
      responseSerialize: (v: MessageShape<DescMessage>) => Buffer.from(toBinary(m.output, v)),
      responseDeserialize: (b: Buffer) => fromBinary(m.output, b),
    } as grpc.MethodDefinition<unknown, unknown>;
  }
  return def;
}

function serviceError(err: unknown): Partial<grpc.StatusObject> {
  const e = toRpcError(err);
  return { code: e.code, details: e.message, metadata: e.toMetadata() };
}

/** Tracks in-flight calls so shutdown can cancel what does not finish in time. */
export class CallRegistry {
  private readonly live = new Set<AbortController>();
  track(): AbortController {
    const ac = new AbortController();
    this.live.add(ac);
    return ac;
  }
  done(ac: AbortController): void {
    this.live.delete(ac);
  }
  get size(): number {
    return this.live.size;
  }
  abortAll(reason: string): void {
    for (const ac of this.live) ac.abort(new RpcError(Status.UNAVAILABLE, reason));
  }
}

export function addService<T extends GenServiceMethods>(
  server: grpc.Server,
  svc: GenService<T>,
  impl: ServiceImpl<T>,
  calls: CallRegistry = new CallRegistry(),
): void {
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const m of svc.methods as DescMethod[]) {
    const fn = (impl as Record<string, unknown>)[m.localName];
    if (typeof fn !== "function") throw new Error(`${svc.typeName}.${m.name} has no implementation`);
    handlers[m.localName] =
      m.methodKind === "unary"
        ? unaryHandler(m, fn as UnaryHandler<DescMessage, DescMessage>, calls)
        : streamHandler(m, fn as StreamHandler<DescMessage, DescMessage>, calls);
  }
  server.addService(serviceDefinition(svc as GenService<GenServiceMethods>), handlers);
}

function unaryHandler(m: DescMethod, fn: UnaryHandler<DescMessage, DescMessage>, calls: CallRegistry) {
  return (call: grpc.ServerUnaryCall<MessageShape<DescMessage>, unknown>, cb: grpc.sendUnaryData<unknown>) => {
    const ac = calls.track();
    const cancel = abortOnClientCancel(call, ac);
    Promise.resolve()
      .then(() => fn(call.request, { signal: ac.signal, metadata: call.metadata }))
      .then(
        (res) => {
          cancel.settled();
          cb(null, create(m.output, res as MessageInitShape<DescMessage>));
        },
        (err) => {
          cancel.settled();
          cb(serviceError(err));
        },
      )
      .finally(() => calls.done(ac));
  };
}

function streamHandler(m: DescMethod, fn: StreamHandler<DescMessage, DescMessage>, calls: CallRegistry) {
  return (call: grpc.ServerWritableStream<MessageShape<DescMessage>, unknown>) => {
    const ac = calls.track();
    const cancel = abortOnClientCancel(call, ac);
    void (async () => {
      try {
        for await (const ev of fn(call.request, { signal: ac.signal, metadata: call.metadata })) {
          if (ac.signal.aborted) break;
          // Honour backpressure: a slow client must not make us buffer a whole completion.
          if (!call.write(create(m.output, ev as MessageInitShape<DescMessage>))) {
            await new Promise<void>((resolve) => {
              const done = () => {
                call.off("drain", done);
                ac.signal.removeEventListener("abort", done);
                resolve();
              };
              call.once("drain", done);
              ac.signal.addEventListener("abort", done, { once: true });
            });
          }
        }
        cancel.settled();
        if (ac.signal.aborted && !call.cancelled) {
          call.emit("error", serviceError(ac.signal.reason));
        } else if (!call.cancelled) {
          call.end();
        }
      } catch (err) {
        cancel.settled();
        if (!call.cancelled) call.emit("error", serviceError(err));
      } finally {
        calls.done(ac);
      }
    })();
  };
}

/**
 * Aborts the handler's signal when the client really cancels. grpc-js also
 * emits "cancelled" when a call closes after its handler has answered; an abort
 * then would reach whatever still holds the signal (an MCP client sends
 * notifications/cancelled for a request that already completed), so once the
 * handler has settled, "cancelled" means nothing to it.
 */
function abortOnClientCancel(
  call: Pick<grpc.ServerUnaryCall<unknown, unknown>, "on" | "off">,
  ac: AbortController,
): { settled(): void } {
  let settled = false;
  const onCancelled = () => {
    if (!settled) ac.abort(new RpcError(Status.CANCELLED, "cancelled by client"));
  };
  call.on("cancelled", onCancelled);
  return {
    settled() {
      settled = true;
      call.off("cancelled", onCancelled);
    },
  };
}

function toClientError(err: unknown): RpcError {
  if (isServiceError(err)) return RpcError.fromMetadata(err.code, err.details ?? err.message, err.metadata);
  return toRpcError(err);
}

function isServiceError(err: unknown): err is grpc.ServiceError {
  return err instanceof Error && typeof (err as Partial<grpc.ServiceError>).code === "number";
}

function callOptions(opts?: CallOptions): grpc.CallOptions {
  return opts?.timeoutMs ? { deadline: Date.now() + opts.timeoutMs } : {};
}

function callMetadata(opts?: CallOptions): grpc.Metadata {
  const md = new grpc.Metadata();
  if (opts?.waitForReady) md.setOptions({ waitForReady: true });
  return md;
}

/** A typed client for a protobuf-es service over a Unix socket. */
export function createClient<T extends GenServiceMethods>(svc: GenService<T>, socketPath: string): ServiceClient<T> {
  const raw = new grpc.Client(`unix://${socketPath}`, grpc.credentials.createInsecure(), {
    // One channel per peer daemon; keep it alive so the first call after idle is not a reconnect.
    "grpc.keepalive_time_ms": 60_000,
    // A peer on the same machine comes back within seconds of a restart; do not
    // let the default backoff (up to 2 minutes) keep the channel down after it.
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 2_000,
    "grpc.max_receive_message_length": 64 * 1024 * 1024,
    "grpc.max_send_message_length": 64 * 1024 * 1024,
  });
  const client: Record<string, unknown> = {
    close: () => raw.close(),
    waitForReady: (timeoutMs: number) =>
      new Promise<void>((resolve, reject) =>
        raw.waitForReady(Date.now() + timeoutMs, (err) => (err ? reject(err) : resolve())),
      ),
  };
  for (const m of svc.methods as DescMethod[]) {
    const path = `/${svc.typeName}/${m.name}`;
    const serialize = (v: MessageShape<DescMessage>) => Buffer.from(toBinary(m.input, v));
    const deserialize = (b: Buffer) => fromBinary(m.output, b);
    if (m.methodKind === "unary") {
      client[m.localName] = (req: MessageInitShape<DescMessage>, opts?: CallOptions) =>
        new Promise((resolve, reject) => {
          const call = raw.makeUnaryRequest(
            path,
            serialize,
            deserialize,
            create(m.input, req),
            callMetadata(opts),
            callOptions(opts),
            (err, res) => (err ? reject(toClientError(err)) : resolve(res)),
          );
          opts?.signal?.addEventListener("abort", () => call.cancel(), { once: true });
        });
    } else {
      client[m.localName] = (req: MessageInitShape<DescMessage>, opts?: CallOptions) => ({
        async *[Symbol.asyncIterator]() {
          const call = raw.makeServerStreamRequest(
            path,
            serialize,
            deserialize,
            create(m.input, req),
            callMetadata(opts),
            callOptions(opts),
          );
          const onAbort = () => call.cancel();
          opts?.signal?.addEventListener("abort", onAbort, { once: true });
          try {
            for await (const ev of call) yield ev;
          } catch (err) {
            throw toClientError(err);
          } finally {
            opts?.signal?.removeEventListener("abort", onAbort);
            // Leaving the loop early (break/return) must cancel the server side too.
            call.cancel();
          }
        },
      });
    }
  }
  return client as ServiceClient<T>;
}
