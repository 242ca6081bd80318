import { BoxmakerError, Status, type FinalMessage } from "@boxmaker/common";
import type { LogRecord } from "./sessions/log-record.js";

/**
 * loopd's own failures. Each has a fixed code that tests and callers branch
 * on, and the gRPC status it becomes when it leaves the daemon (toRpcError).
 */

/** A session log damaged before its last record: the session can only be shown, read-only. */
export class LogCorruptError extends BoxmakerError {
  constructor(
    message: string,
    /** The records before the damage, so the session can still be shown (read-only). */
    readonly validPrefix: LogRecord[] = [],
  ) {
    super("LOG_CORRUPT", message, { status: Status.DATA_LOSS });
  }
}

/** The record was not persisted; nothing was acknowledged and nothing may act on it. */
export class LogWriteError extends BoxmakerError {
  constructor(message: string, options: { cause: unknown }) {
    const errno = errnoOf(options.cause);
    super("LOG_WRITE_FAILED", message, {
      cause: options.cause,
      status: errno === "ENOSPC" ? Status.RESOURCE_EXHAUSTED : Status.INTERNAL,
    });
  }

  /** The errno code behind it (ENOSPC on a full disk). */
  get errno(): string | undefined {
    return errnoOf(this.cause);
  }
}

/** A write to a session whose log is damaged: it is shown, never written to. */
export class SessionReadOnlyError extends BoxmakerError {
  constructor(message: string) {
    super("SESSION_READ_ONLY", message, { status: Status.FAILED_PRECONDITION });
  }
}

/** The turn's wall-clock budget ran out; used as the abort reason of its requests. */
export class WallBudgetExceeded extends BoxmakerError {
  constructor() {
    super("WALL_BUDGET_EXCEEDED", "the turn's wall-clock budget is spent", { status: Status.DEADLINE_EXCEEDED });
  }
}

/**
 * A message with large input to spill while brokerd (which keeps the blobs) is not answering:
 * sent whole, it would fail as a prompt too long for the slot, blaming the conversation.
 */
export class BlobStoreUnavailable extends BoxmakerError {
  constructor(bytes: number, why: string) {
    super(
      "BLOB_STORE_UNAVAILABLE",
      `this message holds ${Math.round(bytes / 1024)} KB of input that goes to brokerd's blob store, and ${why}; ` +
        "nothing was sent or saved: send it again once brokerd is back (boxmaker status shows it)",
      { status: Status.UNAVAILABLE },
    );
  }
}

/** A turn (or its wait for a slot) stopped by the operator or by loopd shutting down. */
export class TurnCancelled extends BoxmakerError {
  /** A person (or a client on their behalf) asked for it, as opposed to loopd stopping. */
  readonly byOperator: boolean;
  constructor(reason: string, opts: { byOperator?: boolean } = {}) {
    super("TURN_CANCELLED", reason, { status: Status.CANCELLED });
    this.byOperator = opts.byOperator ?? false;
  }
}

/**
 * A request stopped mid-answer (the turn was cancelled, or its wall budget ran
 * out) with what the server had streamed: the loop keeps it in the session.
 */
export class InterruptedAnswer extends BoxmakerError {
  constructor(
    readonly partial: FinalMessage,
    options: { cause: unknown },
  ) {
    super("ANSWER_INTERRUPTED", "the answer was cut off", { cause: options.cause, status: Status.CANCELLED });
  }
}

/** inferproxy's stream ended without the final message every completion ends with. */
export class IncompleteStreamError extends BoxmakerError {
  constructor() {
    super("INCOMPLETE_STREAM", "inferproxy ended the stream without a final message", { status: Status.INTERNAL });
  }
}

/** The model answered the compaction request with nothing to fold into the new epoch. */
export class EmptySummaryError extends BoxmakerError {
  constructor() {
    super("EMPTY_SUMMARY", "compaction failed: the model returned an empty summary", { status: Status.INTERNAL });
  }
}

/** brokerd stored a spilled block under another hash than loopd computed: the pointer would be wrong. */
export class BlobHashMismatchError extends BoxmakerError {
  constructor(stored: string, expected: string) {
    super("BLOB_HASH_MISMATCH", `brokerd stored the block as ${stored}, expected ${expected}`, {
      status: Status.INTERNAL,
    });
  }
}

function errnoOf(cause: unknown): string | undefined {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}
