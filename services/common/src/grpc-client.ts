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
import { RpcError, toRpcError } from "./errors.js";
import type { BidiCall, CallOptions, ServiceClient } from "./service-client.js";
import type { Status } from "./status.js";

// The client half of the gRPC adapter: a typed client for any generated
// protobuf-es service over a Unix socket, with RpcError (status, details,
// code, cause) for every failure.

function toClientError(err: unknown): RpcError {
  if (isServiceError(err))
    return RpcError.fromTrailers(err.code as number as Status, err.details ?? err.message, err.metadata?.getMap());
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
    // No retry policy is configured and no channelz service is served: with both off, grpc-js
    // neither prepares each call for a retry nor keeps channelz records of it.
    "grpc.enable_retries": 0,
    "grpc.enable_channelz": 0,
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
    if (m.methodKind === "bidi_streaming") {
      client[m.localName] = (opts?: CallOptions) => bidiCall(raw, path, m, serialize, deserialize, opts);
      continue;
    }
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
          yield* responsesOf(call, opts?.signal);
        },
      });
    }
  }
  return client as ServiceClient<T>;
}

function bidiCall(
  raw: grpc.Client,
  path: string,
  m: DescMethod,
  serialize: (v: MessageShape<DescMessage>) => Buffer,
  deserialize: (b: Buffer) => MessageShape<DescMessage>,
  opts?: CallOptions,
): BidiCall<DescMessage, DescMessage> {
  const call = raw.makeBidiStreamRequest(path, serialize, deserialize, callMetadata(opts), callOptions(opts));
  // Failures reach the caller through the iteration; a write racing a broken call must not
  // raise an 'error' nobody listens to any more.
  call.on("error", () => undefined);
  return {
    send: (req) => call.write(create(m.input, req)),
    end: () => call.end(),
    cancel: () => call.cancel(),
    [Symbol.asyncIterator]: () => responsesOf(call, opts?.signal),
  };
}

/**
 * A call's responses: a signal that aborts cancels the call, a failure comes
 * out as an RpcError, and leaving the loop early (break/return) cancels the
 * server side too.
 */
async function* responsesOf(
  call: AsyncIterable<unknown> & { cancel(): void },
  signal: AbortSignal | undefined,
): AsyncGenerator<MessageShape<DescMessage>> {
  const onAbort = () => call.cancel();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for await (const ev of call) yield ev as MessageShape<DescMessage>;
  } catch (err) {
    throw toClientError(err);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    call.cancel();
  }
}
