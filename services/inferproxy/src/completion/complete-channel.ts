import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  AsyncQueue,
  RpcError,
  Status,
  toRpcError,
  type CallContext,
  type ChannelEventSchema,
  type ChannelRequest,
  type CompleteRequest,
} from "@boxmaker/common";
import type { CompletionEventInit } from "./completion-stream.js";

type ChannelEventInit = MessageInitShape<typeof ChannelEventSchema>;

/** How one completion runs: InferProxy.complete, as the Complete call uses it. */
export type RunCompletion = (req: CompleteRequest, ctx: CallContext) => AsyncIterable<CompletionEventInit>;

/**
 * InferService.CompleteChannel: many completions over one stream, each run as
 * Complete would run it, its events tagged with the caller's id and ended by
 * one `end` carrying the status Complete's call would have ended with. A
 * cancel message does what cancelling a Complete call does. The stream ends
 * when the caller ends its side and every completion on it is over; a stream
 * that breaks aborts them all.
 */
export async function* completeChannel(
  requests: AsyncIterable<ChannelRequest>,
  ctx: CallContext,
  complete: RunCompletion,
): AsyncGenerator<ChannelEventInit> {
  const out = new AsyncQueue<ChannelEventInit>();
  ctx.signal.addEventListener("abort", () => out.close(), { once: true });
  const running = new Map<bigint, AbortController>();
  let requestsEnded = false;
  const finishIfIdle = () => {
    if (requestsEnded && running.size === 0) out.close();
  };

  const run = async (callId: bigint, req: CompleteRequest) => {
    const ac = new AbortController();
    running.set(callId, ac);
    const onStreamAbort = () => ac.abort(ctx.signal.reason);
    ctx.signal.addEventListener("abort", onStreamAbort, { once: true });
    try {
      for await (const ev of complete(req, { signal: ac.signal, metadata: ctx.metadata })) {
        // At the writer's pace: pushing on would let this completion parse and relay the rest
        // of what llama-server sent before the stream's writer could put its first event on
        // the socket (docs/benchmarks.md, "Figures behind the code"), as Complete's pulled generator never did.
        await out.offer({ callId, kind: { case: "event", value: ev } });
      }
      out.push({ callId, kind: { case: "end", value: { code: Status.OK } } });
    } catch (err) {
      out.push(endWith(callId, toRpcError(err)));
    } finally {
      ctx.signal.removeEventListener("abort", onStreamAbort);
      running.delete(callId);
      finishIfIdle();
    }
  };

  void (async () => {
    try {
      for await (const r of requests) {
        if (r.kind.case === "start") {
          if (running.has(r.callId)) {
            out.push(endWith(r.callId, new RpcError(Status.ALREADY_EXISTS, `call ${r.callId} is already running`)));
          } else {
            void run(r.callId, r.kind.value);
          }
        } else if (r.kind.case === "cancel") {
          running.get(r.callId)?.abort(new RpcError(Status.CANCELLED, "cancelled by client"));
        }
      }
    } catch {
      // The caller's stream broke: ctx.signal aborts every completion on it.
    } finally {
      requestsEnded = true;
      finishIfIdle();
    }
  })();

  yield* out;
}

function endWith(callId: bigint, e: RpcError): ChannelEventInit {
  // What the call's trailers would have carried (details, error code, cause).
  return { callId, kind: { case: "end", value: { code: e.status, message: e.message, details: e.wireDetails() } } };
}
