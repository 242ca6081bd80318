import { RpcError, Status, toRpcError } from "@boxmaker/common";
import type { Breach } from "./budgets.js";
import { cutForPerson } from "../error-text.js";
import { LogWriteError } from "../errors.js";
import type { EventBody } from "../sessions/event-hub.js";

/** What a turn came to, for the runner and a parent session (the CLI's TurnOutcome is the exit code a person sees). */
export interface TurnResult {
  finishReason: "stop" | "length" | "budget" | "cancelled" | "failed";
  iterations: number;
  cacheN: number;
  promptN: number;
  predictedN: number;
  promptMs: number;
  predictedMs: number;
  wallMs: number;
  finalText: string;
  /** Blocks of the user's message the pre-pass sent to the blob store. */
  spilledBlocks: number;
  /** New epochs the turn started. */
  compactions: number;
  breach?: Breach;
  error?: RpcError;
}

/** The event that ends a turn that ran: turn_done, or turn_failed with the (cut) error. */
export function turnEndEvent(r: TurnResult): EventBody {
  if (r.error) {
    return {
      case: "turnFailed",
      value: { code: r.error.statusName, status: r.error.status, message: r.error.message },
    };
  }
  const seen = r.cacheN + r.promptN;
  return {
    case: "turnDone",
    value: {
      finishReason: r.finishReason,
      iterations: r.iterations,
      timings: {
        cacheN: r.cacheN,
        promptN: r.promptN,
        promptMs: r.promptMs,
        predictedN: r.predictedN,
        predictedMs: r.predictedMs,
      },
      cacheHitRatio: seen ? r.cacheN / seen : 0,
      wallMs: r.wallMs,
      finalText: r.finalText,
      spilledBlocks: r.spilledBlocks,
      compactions: r.compactions,
    },
  };
}

/**
 * The event that ends a turn that never got going: cancelled while it waited
 * for its slot, or failed before the loop could report it (a log that cannot
 * be written).
 */
export function abandonedTurnEvent(err: unknown, cancelled: boolean, cancelReason = ""): EventBody {
  if (cancelled) {
    return {
      case: "turnDone",
      value: { finishReason: "cancelled", iterations: 0, cacheHitRatio: 0, wallMs: 0, finalText: "", cancelReason },
    };
  }
  const e = turnError(err);
  return { case: "turnFailed", value: { code: e.statusName, status: e.status, message: cutForPerson(e.message) } };
}

/** What a failed turn tells the client; a log that cannot be written is named as such. */
export function turnError(err: unknown): RpcError {
  if (err instanceof LogWriteError) {
    const full = err.errno === "ENOSPC";
    return new RpcError(
      full ? Status.RESOURCE_EXHAUSTED : Status.INTERNAL,
      `loopd cannot write the session log${full ? " (the disk is full)" : ""}: ${err.message}. Nothing after the last saved record was acted on; free space and send the message again.`,
    );
  }
  return toRpcError(err);
}
