import { setTimeout as sleep } from "node:timers/promises";
import { ErrorReason, RpcError, Status, toRpcError } from "@boxmaker/common";
import { cutForPerson } from "../error-text.js";

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
 * The server is waited for once per outage, for at most loopd's
 * `server_wait_ms` (what a restart with its model load takes): a re-sent
 * request that the server never answered within that window ends the turn,
 * in one line, instead of being sent into the same outage again. Retries
 * (at most MAX_RETRIES) are for a server that came back and went away again.
 *
 * A turn that has not yet had a word from the server fails at once, as
 * before: a person who starts a turn against a server that is down learns so
 * now, not after the wall budget. A scheduled turn, which nobody watches,
 * waits from the start.
 */

/** Retries per turn: a server that keeps going away is not coming back to stay. */
const MAX_RETRIES = 5;
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
  /** How long the re-sent request may wait for the server (CompleteRequest.wait_for_server_ms). */
  waitMs: number;
  /** The wait is the whole server_wait_ms window, not what a nearly spent wall budget left of it. */
  fullWindow: boolean;
}

/** One turn's retries: how many were made, and whether the turn has reached the server yet. */
export class TurnRetries {
  used = 0;
  /** The server answered something in this turn: an outage from now on is mid-turn. */
  reached = false;

  constructor(
    /** Retry even before the server has answered anything (a scheduled turn). */
    readonly fromStart = false,
    /** The longest a re-sent request waits for the server (loopd's server_wait_ms). */
    readonly serverWaitMs = 120_000,
    readonly max = MAX_RETRIES,
  ) {}

  /** Whether `err` is a server that went away, and another attempt is allowed. */
  mayRetry(err: unknown, signal: AbortSignal): boolean {
    if (signal.aborted || this.used >= this.max) return false;
    if (!(this.reached || this.fromStart)) return false;
    return isServerGone(err);
  }

  /**
   * The re-sent request `retry` failed UNAVAILABLE before the server answered
   * it: the server was waited for the whole window and is still away (or
   * inferproxy is). Sending it again would only wait again.
   */
  stayedAway(err: unknown, retry: PendingRetry | undefined): retry is PendingRetry {
    return !!retry?.fullWindow && isServerGone(err);
  }

  /** The error a turn ends with when the server stayed away for the whole window: one line that says so. */
  gaveUpWaiting(err: unknown, retry: PendingRetry): RpcError {
    const e = toRpcError(err);
    // The server_wait_ms window is inferproxy's wait for llama-server (SERVER_DOWN); inferproxy itself
    // gone is another wait, of loopd's peer_wait_ms, which its own message already states.
    const waited =
      e.details.reason === ErrorReason.SERVER_DOWN
        ? `the turn waited once, for ${seconds(retry.waitMs)} (loopd server_wait_ms), and gives up`
        : "the turn sent the request again once and gives up";
    return new RpcError(e.status, `${e.message}; ${waited}`, e.details, { cause: err });
  }

  /** The next retry, counted against the limit; it waits for the server up to the window or what the wall budget leaves. */
  next(wallRemainingMs: number | undefined): PendingRetry {
    this.used++;
    const waitMs = Math.max(1, Math.min(this.serverWaitMs, wallRemainingMs ?? this.serverWaitMs));
    return { attempt: this.used, brokeAt: performance.now(), waitMs, fullWindow: waitMs === this.serverWaitMs };
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

/** Milliseconds as a person reads them: "45 s", "2 min", "2.5 min". */
function seconds(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 100) / 10} s`;
  return `${Math.round(ms / 6_000) / 10} min`;
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
