import type { DescMessage, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";

// What a typed client of a generated service looks like, whichever transport
// is underneath.

/** The client type for a generated service constant. */
export type ClientOf<S> = S extends GenService<infer T> ? ServiceClient<T> : never;

export interface CallOptions {
  signal?: AbortSignal;
  /** Milliseconds from now. */
  timeoutMs?: number;
  /**
   * true: queue the call until the peer daemon is reachable (bounded by
   * timeoutMs) instead of failing at once while it restarts. false: fail at
   * once even on a client made with peerWaitMs (a status probe reports a
   * peer that is down now). Nothing is sent before the connection is there.
   */
  waitForReady?: boolean;
}

/** An open bidirectional call: requests go in with `send`, responses come out by iterating it. */
export interface BidiCall<I extends DescMessage, O extends DescMessage> extends AsyncIterable<MessageShape<O>> {
  /** Queues a request; false when the call's buffer is full (wait for the next response or keep it small). */
  send(req: MessageInitShape<I>): boolean;
  /** No more requests: the server sees the request stream end. */
  end(): void;
  /** Ends the call at once, both ways (the iteration then ends with a CANCELLED RpcError). */
  cancel(): void;
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
    : M extends {
          methodKind: "bidi_streaming";
          input: infer I extends DescMessage;
          output: infer O extends DescMessage;
        }
      ? (opts?: CallOptions) => BidiCall<I, O>
      : never;

export type ServiceClient<T extends GenServiceMethods> = { [K in keyof T]: ClientMethod<T[K]> } & {
  close(): void;
  /**
   * Resolves once the channel is connected; rejects UNAVAILABLE after
   * timeoutMs, naming the peer, its socket and what a connect there gets.
   */
  waitForReady(timeoutMs: number, signal?: AbortSignal): Promise<void>;
};
