import { BoxmakerError, Status, messageOf } from "@boxmaker/common";
import { errnoOf, type ServerErrorBody } from "./error-mapping.js";

/**
 * inferproxy's own failures. Each has a fixed `code`; callers branch on the
 * class (or the code), never on `name` or the message. Most never leave the
 * daemon as they are: failure-mapping.ts turns them into the RpcError with the
 * details a caller acts on; `status` is the fallback for one that escapes unmapped.
 */

/** inferproxy aborted the upstream request: llama-server sent nothing and its slot showed no work. */
export class LivenessTimeout extends BoxmakerError<"LIVENESS_TIMEOUT"> {
  constructor(
    readonly silentMs: number,
    readonly why: string,
  ) {
    super("LIVENESS_TIMEOUT", `llama-server sent nothing for ${Math.round(silentMs)} ms (${why})`, {
      status: Status.DEADLINE_EXCEEDED,
    });
  }
}

/** The thinking cap was reached and llama-server would not end the reasoning; the message is the server's. */
export class ThinkingCapRefused extends BoxmakerError<"THINKING_CAP_REFUSED"> {
  constructor(message: string) {
    super("THINKING_CAP_REFUSED", message, { status: Status.ABORTED });
  }
}

/** An `error` object arrived inside a 200 stream. */
export class StreamErrorObject extends BoxmakerError<"UPSTREAM_STREAM_ERROR"> {
  constructor(readonly body: ServerErrorBody) {
    super("UPSTREAM_STREAM_ERROR", body.message ?? "error object in stream", { status: Status.ABORTED });
  }
}

/** The stream said something that is not a chunk, or ended without finishing. */
export class StreamProtocolError extends BoxmakerError<"UPSTREAM_PROTOCOL_ERROR"> {
  constructor(message: string) {
    super("UPSTREAM_PROTOCOL_ERROR", message, { status: Status.INTERNAL });
  }
}

/**
 * Why a new connection to llama-server was not handed to any request: the
 * server on the other end is loading, could not say what it is, or is not the
 * server the contract describes. undici hands the connector's error to the
 * waiting requests; a `code` that is none of its own keeps it out of undici's
 * retry paths (and out of LlamaClient's stale-connection retry).
 */
export class ServerCheckError extends BoxmakerError<"SERVER_CHECK_REFUSED"> {
  constructor(
    readonly kind: "loading" | "mismatch" | "unverified",
    message: string,
  ) {
    super("SERVER_CHECK_REFUSED", message, {
      status: kind === "mismatch" ? Status.FAILED_PRECONDITION : Status.UNAVAILABLE,
    });
  }
}

/** The request never reached llama-server (socket missing, refused, permission). */
export class UpstreamConnectError extends BoxmakerError<"UPSTREAM_CONNECT"> {
  constructor(
    readonly upstream: string,
    cause: unknown,
  ) {
    super("UPSTREAM_CONNECT", `cannot connect to llama-server at ${upstream}: ${errnoOf(cause) ?? messageOf(cause)}`, {
      cause,
      status: Status.UNAVAILABLE,
    });
  }

  get errno(): string | undefined {
    return errnoOf(this.cause);
  }
}

/** A request that did not finish within its time limit (non-streaming calls only). */
export class UpstreamTimeoutError extends BoxmakerError<"UPSTREAM_TIMEOUT"> {
  constructor(message: string) {
    super("UPSTREAM_TIMEOUT", message, { status: Status.DEADLINE_EXCEEDED });
  }
}
