import type { status as Status } from "@grpc/grpc-js";

// The error base every part of Boxmaker shares, without gRPC: the CLI loads it
// on every start (through @boxmaker/common/lite), before it knows whether it
// will talk to a daemon at all.

/**
 * The one base for Boxmaker's own failures. `code` is a stable, documented
 * string (SCREAMING_SNAKE) that callers and tests branch on; messages are for
 * people and may change. `status` is always the numeric gRPC status, never a code. `cause` keeps the error underneath, so a log line or
 * a wire reply can say what actually went wrong.
 */
export class BoxmakerError<C extends string = string> extends Error {
  /** The gRPC status this failure becomes when it leaves a daemon (INTERNAL when unset). */
  readonly status: Status | undefined;
  constructor(
    readonly code: C,
    message: string,
    options?: ErrorOptions & { status?: Status },
  ) {
    super(message, options);
    this.status = options?.status;
    // The subclass's own name in stack traces and logs; never used to recognise an error.
    this.name = new.target.name;
  }
}

/** The message of `err` and of each error in its cause chain, joined: what a person needs to see. */
export function describeCause(err: unknown, depth = 4): string {
  const parts: string[] = [];
  let cur: unknown = err;
  for (let i = 0; i < depth && cur !== undefined && cur !== null; i++) {
    const msg = cur instanceof Error ? cur.message : String(cur);
    // A wrapper that kept its cause's message (an unknown error turned into an RpcError) says it once.
    if (msg !== parts.at(-1)) parts.push(msg);
    cur = cur instanceof Error ? cur.cause : undefined;
  }
  return parts.join(": ");
}

/** The message of anything thrown, without a cast at every catch site. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** True for the error an aborted fetch, stream or timer throws (a DOMException, or Node's AbortError). */
export function isAbortError(err: unknown): boolean {
  if (err instanceof DOMException) return err.code === DOMException.ABORT_ERR;
  return err instanceof Error && (err as { code?: unknown }).code === "ABORT_ERR";
}
