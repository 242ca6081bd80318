import type * as grpc from "@grpc/grpc-js";
import { ERROR_DETAILS_TRAILER, RpcError, Status, decodeErrorDetails, toRpcError } from "./errors.js";

// A gRPC call's failure in the client's words: whom it waited for and how
// long, and which connection broke, where grpc-js's own words name neither.

export const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/**
 * What grpc-js says when the connection itself broke (the peer died or
 * restarted mid-call), as opposed to an error the peer sent or a reply that
 * was no gRPC (a stream reset, an HTTP status: those keep grpc-js's words).
 * These name no daemon, so the error says which connection it was.
 */
const BROKEN_CONNECTION =
  /Connection dropped|ECONNRESET|ECONNREFUSED|EPIPE|No connection established|socket hang up|Connection closed/i;

/** One call's failure as an RpcError; a deadline this client set says whom it waited for and how long. */
export function clientError(
  err: unknown,
  call: { method: string; socketPath: string; peer: string; deadline?: number; timeoutMs?: number },
) {
  if (!isServiceError(err)) return toRpcError(err);
  const status = err.code as number as Status;
  // grpc-js ends the call at the deadline itself; a DEADLINE_EXCEEDED the server sent earlier keeps its own words.
  if (status === Status.DEADLINE_EXCEEDED && call.deadline !== undefined && Date.now() >= call.deadline - 20)
    return new RpcError(
      status,
      `${call.method}: deadline exceeded: ${call.socketPath} did not answer within ${seconds(call.timeoutMs ?? 0)}`,
    );
  const trailer = err.metadata?.get(ERROR_DETAILS_TRAILER)[0];
  const details = decodeErrorDetails(trailer);
  const said = err.details ?? err.message;
  if (
    trailer === undefined &&
    (status === Status.UNAVAILABLE || status === Status.INTERNAL) &&
    BROKEN_CONNECTION.test(said)
  )
    return RpcError.fromWire(
      status,
      `${call.method}: the connection to ${call.peer} (${call.socketPath}) broke: ${said}`,
      details,
    );
  return RpcError.fromWire(status, said, details);
}

function isServiceError(err: unknown): err is grpc.ServiceError {
  return err instanceof Error && typeof (err as Partial<grpc.ServiceError>).code === "number";
}
