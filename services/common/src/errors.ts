import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { BoxmakerError, describeCause, isAbortError, messageOf } from "./boxmaker-error.js";
import { type ErrorDetails, ErrorDetailsSchema } from "./gen/boxmaker/v1/errors_pb.js";
// grpc-js's own table of gRPC status codes: the one library that speaks gRPC here.
import { status as Status } from "@grpc/grpc-js";

export { Status };
export { BoxmakerError, describeCause, isAbortError, messageOf };

/** The facts an error is raised with: any of ErrorDetails' fields (errors.proto). */
export type ErrorDetailsInit = Omit<MessageInitShape<typeof ErrorDetailsSchema>, "$typeName">;

/**
 * The one trailer a failed reply carries besides grpc-status and
 * grpc-message: ErrorDetails, binary. Our own key rather than the standard
 * grpc-status-details-bin, which holds a google.rpc.Status wrapping Any:
 * that would need googleapis' protos and type-URL packing for one message
 * only Boxmaker's own peers read.
 */
export const ERROR_DETAILS_TRAILER = "boxmaker-error-details-bin";

/** The longest cause a reply carries (it is for people; the daemon's log has all of it). */
const MAX_CAUSE_CHARS = 2_000;

/**
 * A failure that crosses a process boundary. `status` is its numeric gRPC
 * status; `details` its typed facts (errors.proto), parsed once where the
 * reply arrives. Callers branch on `status` and `details.reason` only. `code`
 * is, as on every BoxmakerError, the domain error's stable code: the one
 * behind the reply (`details.errorCode`), "" when there was none. The cause's
 * message travels too, so the CLI can show what the daemon saw underneath.
 */
export class RpcError extends BoxmakerError {
  declare readonly status: Status;
  readonly details: ErrorDetails;

  constructor(status: Status, message: string, details: ErrorDetailsInit = {}, options?: ErrorOptions) {
    const d = create(ErrorDetailsSchema, details);
    super(d.errorCode, message, { ...options, status });
    this.details = d;
  }

  get statusName(): string {
    return Status[this.status] ?? `CODE_${this.status}`;
  }

  /** The details as they leave the process: with the cause chain's messages below this error's own. */
  wireDetails(): ErrorDetails {
    const chain = describeCause(this);
    if (chain.length <= this.message.length) return this.details;
    return { ...this.details, cause: chain.slice(this.message.length + 2, this.message.length + 2 + MAX_CAUSE_CHARS) };
  }

  /** The error a reply with this status, message and details stands for; its cause is the one the details name. */
  static fromWire(status: Status, message: string, details: ErrorDetails | undefined): RpcError {
    const d = details ?? create(ErrorDetailsSchema);
    return new RpcError(status, message, d, d.cause ? { cause: new Error(d.cause) } : undefined);
  }
}

/** ErrorDetails as the trailer carries them. */
export function encodeErrorDetails(d: ErrorDetails): Uint8Array {
  return toBinary(ErrorDetailsSchema, d);
}

/**
 * The trailer's details, or none when it is missing or does not parse: a
 * peer's garbled trailer leaves the status and message it came with, rather
 * than turning the reply into another error.
 */
export function decodeErrorDetails(bytes: unknown): ErrorDetails | undefined {
  if (!(bytes instanceof Uint8Array)) return undefined;
  try {
    return fromBinary(ErrorDetailsSchema, bytes);
  } catch {
    return undefined;
  }
}

/**
 * Anything thrown inside a handler becomes an RpcError. A BoxmakerError keeps
 * its status, its code (as `details.errorCode`) and its cause; unknown errors
 * are INTERNAL with themselves as the cause.
 */
export function toRpcError(err: unknown): RpcError {
  if (err instanceof RpcError) return err;
  if (isAbortError(err)) return new RpcError(Status.CANCELLED, "cancelled", {}, { cause: err });
  if (err instanceof BoxmakerError) {
    return new RpcError(err.status ?? Status.INTERNAL, err.message, { errorCode: err.code }, { cause: err.cause });
  }
  return new RpcError(Status.INTERNAL, messageOf(err), {}, { cause: err });
}

export const unavailable = (msg: string, details?: ErrorDetailsInit, options?: ErrorOptions) =>
  new RpcError(Status.UNAVAILABLE, msg, details, options);
export const invalidArgument = (msg: string, details?: ErrorDetailsInit) =>
  new RpcError(Status.INVALID_ARGUMENT, msg, details);
export const failedPrecondition = (msg: string, details?: ErrorDetailsInit) =>
  new RpcError(Status.FAILED_PRECONDITION, msg, details);
export const notFound = (msg: string, details?: ErrorDetailsInit) => new RpcError(Status.NOT_FOUND, msg, details);
export const deadlineExceeded = (msg: string, details?: ErrorDetailsInit, options?: ErrorOptions) =>
  new RpcError(Status.DEADLINE_EXCEEDED, msg, details, options);
export const permissionDenied = (msg: string, details?: ErrorDetailsInit) =>
  new RpcError(Status.PERMISSION_DENIED, msg, details);
export const resourceExhausted = (msg: string, details?: ErrorDetailsInit) =>
  new RpcError(Status.RESOURCE_EXHAUSTED, msg, details);
export const cancelled = (msg = "cancelled") => new RpcError(Status.CANCELLED, msg);
export const internal = (msg: string, details?: ErrorDetailsInit, options?: ErrorOptions) =>
  new RpcError(Status.INTERNAL, msg, details, options);
