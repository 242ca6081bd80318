import { setTimeout as sleep } from "node:timers/promises";
import { RpcError, Status, toRpcError } from "@boxmaker/common";
import { cutForPerson } from "./error-text.js";

/**
 * Sending a model request again when llama-server (or inferproxy) went away
 * under it: killed, crashed, restarted by systemd.
 *
 * loopd holds the retry, not inferproxy: it owns the turn's wall-clock
 * budget and the session log, and a request that failed before its final
 * message has written nothing to the log, so sending it again cannot log
 * anything twice. inferproxy, which knows the upstream, does the waiting:
 * the re-sent request carries `wait_for_server_ms` and inferproxy holds it
 * until the server answers /health and passes its self-test. Only the wait
 * between attempts for inferproxy itself (a gRPC UNAVAILABLE) is loopd's.
 *
 * A turn that has not yet had a word from the server fails at once, as
 * before: a person who starts a turn against a server that is down learns so
 * now, not after the wall budget. A scheduled turn, which nobody watches,
 * waits from the start.
 */

/** Retries per turn: a server that keeps going away is not coming back to stay. */
const MAX_RETRIES = 5;
/** The longest one re-sent request waits for the server (a model load is seconds to a minute). */
const MAX_WAIT_FOR_SERVER_MS = 180_000;
/** Before attempt n, for inferproxy's own restart (systemd brings it back in ~3 s). */
const backoffMs = (attempt: number) => Math.min(4_000, 250 * 2 ** (attempt - 1));

/** What the cut attempt had streamed to the person: it is discarded, the reply starts again. */
export interface Shown {
  contentChars: number;
  reasoningTokens: number;
}

/** The retry being made, until the server answers it. */
export interface PendingRetry {
  attempt: number;
  brokeAt: number;
}

/** One turn's retries: how many were made, and whether the turn has reached the server yet. */
export class TurnRetries {
  used = 0;
  /** The server answered something in this turn: an outage from now on is mid-turn. */
  reached = false;

  constructor(
    /** Retry even before the server has answered anything (a scheduled turn). */
    readonly fromStart = false,
    readonly max = MAX_RETRIES,
  ) {}

  /** Whether `err` is a server that went away, and another attempt is allowed. */
  mayRetry(err: unknown, signal: AbortSignal): boolean {
    if (signal.aborted || this.used >= this.max) return false;
    if (!(this.reached || this.fromStart)) return false;
    return isServerGone(err);
  }

  /** The next retry's number, counted against the limit. */
  next(): PendingRetry {
    this.used++;
    return { attempt: this.used, brokeAt: performance.now() };
  }

  /** The error a turn ends with once the retries are spent: it says they were. */
  exhausted(err: unknown): unknown {
    if (this.used === 0 || !isServerGone(err)) return err;
    const e = toRpcError(err);
    return new RpcError(
      e.status,
      `${e.message} (the request was sent again ${this.used} time${this.used === 1 ? "" : "s"}; giving up)`,
      e.details,
      { cause: err },
    );
  }
}

/**
 * UNAVAILABLE from inferproxy: the stream dropped mid-completion, the server
 * refused the connection, was loading, had not passed its self-test yet, or
 * inferproxy itself was not there. A hung server (DEADLINE_EXCEEDED) is not
 * coming back by itself, and another model (FAILED_PRECONDITION) is refused.
 */
function isServerGone(err: unknown): boolean {
  return err instanceof RpcError && err.status === Status.UNAVAILABLE;
}

/** How long the re-sent request may wait for the server: what the wall budget leaves, within a cap. */
export function waitForServerMs(wallRemainingMs: number | undefined): number {
  return Math.max(1, Math.min(MAX_WAIT_FOR_SERVER_MS, wallRemainingMs ?? MAX_WAIT_FOR_SERVER_MS));
}

/** The pause before re-sending; an abort (cancel, wall budget) ends it by throwing. */
export async function pauseBeforeRetry(attempt: number, signal: AbortSignal): Promise<void> {
  await sleep(backoffMs(attempt), undefined, { signal });
}

/** The person-facing reason of a cut attempt, short. */
export function retryReason(err: unknown): { code: string; reason: string } {
  const e = toRpcError(err);
  return { code: e.statusName, reason: cutForPerson(e.message) };
}
