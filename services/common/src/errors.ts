import { BoxmakerError, describeCause, isAbortError, messageOf } from "./boxmaker-error.js";
// grpc-js's own table of gRPC status codes: the one library that speaks gRPC here.
import { status as Status } from "@grpc/grpc-js";

export { Status };
export { BoxmakerError, describeCause, isAbortError, messageOf };

const DETAIL_PREFIX = "boxmaker-";
// Outside the details prefix, so no detail name can collide with them.
const CODE_KEY = "boxmaker.error-code";
const CAUSE_KEY = "boxmaker.error-cause";

/**
 * A failure that crosses a process boundary; its `code` is the gRPC status.
 * Servers throw it and clients receive it, so a caller can branch on `code`, on the stable
 * `errorCode` (the BoxmakerError code that produced it) and read `details`
 * (structured facts such as the prompt and context sizes) without parsing
 * messages. The cause's message travels too (as trailing metadata), so the
 * CLI can show what the daemon saw underneath.
 */
export class RpcError extends BoxmakerError<Status> {
  constructor(
    code: Status,
    message: string,
    readonly details: Readonly<Record<string, string>> = {},
    options?: ErrorOptions & { errorCode?: string },
  ) {
    super(code, message, options);
    this.errorCode = options?.errorCode ?? "";
  }

  /** The stable code of the BoxmakerError behind this reply ("" when none). */
  readonly errorCode: string;

  get codeName(): string {
    return Status[this.code] ?? `CODE_${this.code}`;
  }

  /**
   * What travels beside the status and message, as trailing metadata: the
   * details, the error code and the cause's message. Plain header pairs, so
   * any transport can carry them.
   */
  toTrailers(): Record<string, string> {
    const out: Record<string, string> = {};
    // Lower case, as gRPC metadata keys are on every transport.
    for (const [k, v] of Object.entries(this.details)) out[`${DETAIL_PREFIX}${k}`.toLowerCase()] = v;
    if (this.errorCode) out[CODE_KEY] = this.errorCode;
    // Header values must be printable ASCII; the cause is for people, so a lossy form is fine.
    const chain = describeCause(this);
    if (chain.length > this.message.length) out[CAUSE_KEY] = printable(chain.slice(this.message.length + 2));
    return out;
  }

  /** The error a reply with this status, message and trailing metadata stands for. */
  static fromTrailers(
    code: Status,
    message: string,
    trailers: Readonly<Record<string, unknown>> | undefined,
  ): RpcError {
    const details: Record<string, string> = {};
    let errorCode = "";
    let cause: string | undefined;
    for (const [k, v] of Object.entries(trailers ?? {})) {
      if (k === CODE_KEY) errorCode = String(v);
      else if (k === CAUSE_KEY) cause = String(v);
      else if (k.startsWith(DETAIL_PREFIX)) details[k.slice(DETAIL_PREFIX.length)] = String(v);
    }
    return new RpcError(code, message, details, {
      errorCode,
      ...(cause !== undefined ? { cause: new Error(cause) } : {}),
    });
  }
}

function printable(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, "?").slice(0, 2000);
}

/**
 * Anything thrown inside a handler becomes an RpcError. A BoxmakerError keeps
 * its status, its code as the reply's `errorCode` and its cause; unknown errors
 * are INTERNAL with themselves as the cause.
 */
export function toRpcError(err: unknown): RpcError {
  if (err instanceof RpcError) return err;
  if (isAbortError(err)) return new RpcError(Status.CANCELLED, "cancelled", {}, { cause: err });
  if (err instanceof BoxmakerError && typeof err.code === "string") {
    return new RpcError(err.status ?? Status.INTERNAL, err.message, {}, { errorCode: err.code, cause: err.cause });
  }
  return new RpcError(Status.INTERNAL, messageOf(err), {}, { cause: err });
}

export const unavailable = (msg: string, details?: Record<string, string>, options?: ErrorOptions) =>
  new RpcError(Status.UNAVAILABLE, msg, details, options);
export const invalidArgument = (msg: string, details?: Record<string, string>) =>
  new RpcError(Status.INVALID_ARGUMENT, msg, details);
export const failedPrecondition = (msg: string, details?: Record<string, string>) =>
  new RpcError(Status.FAILED_PRECONDITION, msg, details);
export const notFound = (msg: string, details?: Record<string, string>) => new RpcError(Status.NOT_FOUND, msg, details);
export const deadlineExceeded = (msg: string, details?: Record<string, string>, options?: ErrorOptions) =>
  new RpcError(Status.DEADLINE_EXCEEDED, msg, details, options);
export const permissionDenied = (msg: string, details?: Record<string, string>) =>
  new RpcError(Status.PERMISSION_DENIED, msg, details);
export const resourceExhausted = (msg: string, details?: Record<string, string>) =>
  new RpcError(Status.RESOURCE_EXHAUSTED, msg, details);
export const cancelled = (msg = "cancelled") => new RpcError(Status.CANCELLED, msg);
export const internal = (msg: string, details?: Record<string, string>, options?: ErrorOptions) =>
  new RpcError(Status.INTERNAL, msg, details, options);
