import { Metadata, status as Status } from "@grpc/grpc-js";

export { Status };

/**
 * A failure that crosses a process boundary. Servers throw it and clients
 * receive it, so a caller can branch on `code` and read `details` (structured
 * facts such as the prompt and context sizes) without parsing messages.
 */
export class RpcError extends Error {
  override readonly name = "RpcError";
  constructor(
    readonly code: Status,
    message: string,
    readonly details: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }

  get codeName(): string {
    return Status[this.code] ?? `CODE_${this.code}`;
  }

  toMetadata(): Metadata {
    const md = new Metadata();
    for (const [k, v] of Object.entries(this.details)) md.set(`boxmaker-${k}`, v);
    return md;
  }

  static fromMetadata(code: Status, message: string, md: Metadata | undefined): RpcError {
    const details: Record<string, string> = {};
    if (md) {
      for (const [k, v] of Object.entries(md.getMap())) {
        if (k.startsWith("boxmaker-")) details[k.slice("boxmaker-".length)] = String(v);
      }
    }
    return new RpcError(code, message, details);
  }
}

/** Anything thrown inside a handler becomes an RpcError; unknown errors are INTERNAL. */
export function toRpcError(err: unknown): RpcError {
  if (err instanceof RpcError) return err;
  if (err instanceof Error && err.name === "AbortError") return new RpcError(Status.CANCELLED, "cancelled");
  const message = err instanceof Error ? err.message : String(err);
  return new RpcError(Status.INTERNAL, message);
}

export const unavailable = (msg: string, details?: Record<string, string>) =>
  new RpcError(Status.UNAVAILABLE, msg, details);
export const invalidArgument = (msg: string, details?: Record<string, string>) =>
  new RpcError(Status.INVALID_ARGUMENT, msg, details);
export const failedPrecondition = (msg: string, details?: Record<string, string>) =>
  new RpcError(Status.FAILED_PRECONDITION, msg, details);
export const notFound = (msg: string, details?: Record<string, string>) => new RpcError(Status.NOT_FOUND, msg, details);
export const deadlineExceeded = (msg: string, details?: Record<string, string>) =>
  new RpcError(Status.DEADLINE_EXCEEDED, msg, details);
export const permissionDenied = (msg: string, details?: Record<string, string>) =>
  new RpcError(Status.PERMISSION_DENIED, msg, details);
export const resourceExhausted = (msg: string, details?: Record<string, string>) =>
  new RpcError(Status.RESOURCE_EXHAUSTED, msg, details);
export const cancelled = (msg = "cancelled") => new RpcError(Status.CANCELLED, msg);
export const internal = (msg: string, details?: Record<string, string>) => new RpcError(Status.INTERNAL, msg, details);
