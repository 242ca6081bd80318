import { ErrorReason, RpcError, Status, deadlineExceeded, internal, messageOf } from "@boxmaker/common";
import { type ErrorContext, mapConnectError, mapStreamError } from "./error-mapping.js";
import {
  LivenessTimeout,
  ServerCheckError,
  StreamErrorObject,
  StreamProtocolError,
  ThinkingCapRefused,
  UpstreamConnectError,
  UpstreamTimeoutError,
} from "./errors.js";

/**
 * inferproxy's own failures (errors.ts) → the RpcError a caller acts on. Pure:
 * what the health monitor must learn is returned, not done, so every mapping
 * is testable without a server. (error-mapping.ts maps llama-server's answers.)
 */

/** A mapped failure, and whether it says the server is gone (the health monitor should know at once). */
export interface MappedFailure {
  error: RpcError;
  serverDown: boolean;
}

/** A new connection refused by the contract check (connection-check.ts) → the status a caller can act on. */
function mapServerCheckError(err: ServerCheckError, ctx: ErrorContext, servedModel: string): RpcError {
  if (err.kind === "mismatch") {
    const details = { upstream: ctx.upstream, reason: ErrorReason.SELF_TEST_FAILED, model: servedModel };
    return new RpcError(Status.FAILED_PRECONDITION, err.message, details, { cause: err });
  }
  return new RpcError(
    Status.UNAVAILABLE,
    err.message,
    {
      upstream: ctx.upstream,
      reason: err.kind === "loading" ? ErrorReason.SERVER_LOADING : ErrorReason.SERVER_UNVERIFIED,
      retryAfterMs: ctx.retryAfterMs,
    },
    { cause: err },
  );
}

/**
 * A request that got no answer from llama-server: never connected, refused by
 * the contract check, or over its time limit. Undefined for anything else.
 */
export function mapRequestFailure(err: unknown, ctx: ErrorContext, servedModel: string): MappedFailure | undefined {
  if (err instanceof UpstreamConnectError) return { error: mapConnectError(err.cause, ctx), serverDown: true };
  if (err instanceof ServerCheckError) return { error: mapServerCheckError(err, ctx, servedModel), serverDown: false };
  if (err instanceof UpstreamTimeoutError) {
    const error = deadlineExceeded(`${ctx.what}: ${err.message}`, { upstream: ctx.upstream }, { cause: err });
    return { error, serverDown: false };
  }
  return undefined;
}

/** What a completion run knows about itself when it fails. */
export interface RunFailureContext extends ErrorContext {
  livenessWindowMs: number;
  completionId: string;
}

/** A completion that failed, and whether inferproxy itself cut it (which decides the events before the status). */
export interface RunFailure extends MappedFailure {
  cutBy: "liveness" | "thinking_cap" | undefined;
}

/**
 * Why a completion run failed → its status. `abortReason` is why inferproxy
 * aborted the upstream request, if it did: that is the real story, whatever
 * error the aborted request then threw.
 */
export function mapRunFailure(err: unknown, abortReason: unknown, ctx: RunFailureContext): RunFailure {
  if (abortReason instanceof LivenessTimeout) {
    const error = deadlineExceeded(
      `llama-server sent nothing for ${Math.round(abortReason.silentMs)} ms (liveness window ${ctx.livenessWindowMs} ms) ` +
        `and ${abortReason.why}; the completion was aborted`,
      {
        upstream: ctx.upstream,
        ...slotOf(ctx),
        livenessTimeoutMs: ctx.livenessWindowMs,
        silentMs: Math.round(abortReason.silentMs),
        livenessReason: abortReason.why,
        completionId: ctx.completionId,
      },
      { cause: abortReason },
    );
    return { error, serverDown: false, cutBy: "liveness" };
  }
  if (abortReason instanceof ThinkingCapRefused) {
    const error = new RpcError(
      Status.ABORTED,
      `thinking cap reached but llama-server refused to end reasoning (${abortReason.message}); the completion was aborted`,
      {
        upstream: ctx.upstream,
        ...slotOf(ctx),
        completionId: ctx.completionId,
        reason: ErrorReason.THINKING_CAP_REFUSED,
      },
      { cause: abortReason },
    );
    return { error, serverDown: false, cutBy: "thinking_cap" };
  }
  const known = (error: RpcError): RunFailure => ({ error, serverDown: false, cutBy: undefined });
  if (err instanceof RpcError) return known(err);
  if (err instanceof StreamErrorObject) return known(mapStreamError(err.body, ctx));
  if (err instanceof StreamProtocolError)
    return known(internal(err.message, { upstream: ctx.upstream }, { cause: err }));
  const error = new RpcError(
    Status.UNAVAILABLE,
    `llama-server at ${ctx.upstream} dropped the stream mid-completion: ${messageOf(err)}`,
    { upstream: ctx.upstream, retryAfterMs: ctx.retryAfterMs },
    { cause: err },
  );
  return { error, serverDown: true, cutBy: undefined };
}

const slotOf = (ctx: ErrorContext) => (ctx.slot !== undefined ? { slot: ctx.slot } : {});
