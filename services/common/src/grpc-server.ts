import type * as grpc from "@grpc/grpc-js";
import { setImmediate } from "node:timers/promises";
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
import { errorReply } from "./error-reply.js";
import { RpcError, Status } from "./errors.js";

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

type BidiHandler<I extends DescMessage, O extends DescMessage> = (
  requests: AsyncIterable<MessageShape<I>>,
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
    : M extends {
          methodKind: "bidi_streaming";
          input: infer I extends DescMessage;
          output: infer O extends DescMessage;
        }
      ? BidiHandler<I, O>
      : never;

/** The implementation of a protobuf-es service: one function per method, keyed by its local name. */
export type ServiceImpl<T extends GenServiceMethods> = { [K in keyof T]: Handler<T[K]> };

/** The implementation type for a generated service constant, e.g. `ImplOf<typeof InferService>`. */
export type ImplOf<S> = S extends GenService<infer T> ? ServiceImpl<T> : never;
/** One grpc-js definition from a protobuf-es descriptor: the only per-service glue there is. */
export function serviceDefinition(svc: GenService<GenServiceMethods>): grpc.ServiceDefinition {
  const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const m of svc.methods) {
    if (m.methodKind === "client_streaming") {
      throw new Error(`${svc.typeName}.${m.name}: ${m.methodKind} methods are not supported`);
    }
    def[m.localName] = {
      path: `/${svc.typeName}/${m.name}`,
      requestStream: m.methodKind === "bidi_streaming",
      responseStream: m.methodKind === "server_streaming",
      requestSerialize: (v: MessageShape<DescMessage>) => Buffer.from(toBinary(m.input, v)),
      requestDeserialize: (b: Buffer) => fromBinary(m.input, b),
      responseSerialize: (v: MessageShape<DescMessage>) => Buffer.from(toBinary(m.output, v)),
      responseDeserialize: (b: Buffer) => fromBinary(m.output, b),
    } as grpc.MethodDefinition<unknown, unknown>;
  }
  return def;
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
        : m.methodKind === "bidi_streaming"
          ? bidiHandler(m, fn as BidiHandler<DescMessage, DescMessage>, calls)
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
          cb(errorReply(err));
        },
      )
      .finally(() => calls.done(ac));
  };
}

function streamHandler(m: DescMethod, fn: StreamHandler<DescMessage, DescMessage>, calls: CallRegistry) {
  return streamingHandler<grpc.ServerWritableStream<MessageShape<DescMessage>, unknown>>(m, calls, (call, ctx) =>
    fn(call.request, ctx),
  );
}

function bidiHandler(m: DescMethod, fn: BidiHandler<DescMessage, DescMessage>, calls: CallRegistry) {
  return streamingHandler<grpc.ServerDuplexStream<MessageShape<DescMessage>, unknown>>(m, calls, (call, ctx) =>
    fn(call as AsyncIterable<MessageShape<DescMessage>>, ctx),
  );
}

/** A handler whose answer is a stream: tracked, cancelled with its client, written by `writeAll`. */
function streamingHandler<
  C extends
    | grpc.ServerWritableStream<MessageShape<DescMessage>, unknown>
    | grpc.ServerDuplexStream<MessageShape<DescMessage>, unknown>,
>(
  m: DescMethod,
  calls: CallRegistry,
  events: (call: C, ctx: CallContext) => AsyncIterable<MessageInitShape<DescMessage>>,
) {
  return (call: C) => {
    const ac = calls.track();
    const cancel = abortOnClientCancel(call, ac);
    void writeAll(m, call, events(call, { signal: ac.signal, metadata: call.metadata }), ac, cancel, calls);
  };
}

/** Writes a handler's events to its call, paced and with backpressure, and ends the call with its status. */
async function writeAll(
  m: DescMethod,
  call: grpc.ServerWritableStream<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>,
  events: AsyncIterable<MessageInitShape<DescMessage>>,
  ac: AbortController,
  cancel: { settled(): void },
  calls: CallRegistry,
): Promise<void> {
  const pacer = new FlushPacer();
  try {
    for await (const ev of events) {
      if (ac.signal.aborted) break;
      // Honour backpressure: a slow client must not make us buffer a whole completion.
      if (call.write(create(m.output, ev))) {
        if (pacer.due()) await pacer.flush();
      } else {
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
      call.emit("error", errorReply(ac.signal.reason));
    } else if (!call.cancelled) {
      call.end();
    }
  } catch (err) {
    cancel.settled();
    if (!call.cancelled) call.emit("error", errorReply(err));
  } finally {
    calls.done(ac);
  }
}

/**
 * When a stream's writes reach the socket. http2 puts written frames on the
 * socket only when the event loop next reaches its check phase, so a producer
 * with more already in hand (the rest of a buffered completion, then a final
 * message and its fsync) would hold every event back until it had done all
 * of it: the client would see the first token last. The first write of a
 * stream goes out at once; after that the loop is given a turn whenever the
 * writes since the last one have taken FLUSH_EVERY_MS, so no event waits
 * longer than that behind our own work, and a burst still leaves in few
 * socket writes instead of one per event.
 */
export class FlushPacer {
  static readonly FLUSH_EVERY_MS = 0.25;
  private last = Number.NEGATIVE_INFINITY;
  constructor(private readonly now: () => number = performance.now.bind(performance)) {}

  /** Whether the writes so far should reach the socket before the next one is made. */
  due(): boolean {
    return this.now() - this.last >= FlushPacer.FLUSH_EVERY_MS;
  }

  /** One turn of the event loop (http2 sends what was written), then the clock starts again. */
  async flush(): Promise<void> {
    await setImmediate();
    this.last = this.now();
  }
}

/**
 * Aborts the handler's signal when the client really cancels. grpc-js also
 * emits "cancelled" when a call closes after its handler has answered; an abort
 * then would reach whatever still holds the signal (an MCP client sends
 * notifications/cancelled for a request that already completed), so once the
 * handler has settled, "cancelled" means nothing to it.
 */
function abortOnClientCancel(
  call: { on(event: "cancelled", fn: () => void): unknown; off(event: "cancelled", fn: () => void): unknown },
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
