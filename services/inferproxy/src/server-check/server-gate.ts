import { ErrorReason, RpcError, Status, cancelled, type Logger } from "@boxmaker/common";
import type { HealthMonitor } from "./health-monitor.js";

/** What a call is let through on: the server's health, named for the errors that say why not. */
export interface ServerGate {
  monitor: HealthMonitor;
  /** The upstream's printable name (LlamaClient.label). */
  upstream: string;
  /** When a refused caller should try again: the health poll's period. */
  retryAfterMs: number;
  log: Logger;
}

/** Completions against a server that fails the contract would poison the session log. */
export function requireSelfTest(g: ServerGate): void {
  const st = g.monitor.selfTest;
  if (!st.ran) {
    throw new RpcError(
      Status.UNAVAILABLE,
      `llama-server at ${g.upstream} has not passed the start-up self-test yet (state: ${g.monitor.state})`,
      { upstream: g.upstream, retryAfterMs: g.retryAfterMs },
    );
  }
  // A failed self-test is not refused here: a refused server keeps no connection, so this
  // request's connection is checked afresh (the server may have been swapped back) and
  // refused there if it still does not match.
}

/** A re-sent request waits for a server that went away to be back (CompleteRequest.wait_for_server_ms). */
export async function waitForServer(g: ServerGate, ms: number, signal: AbortSignal): Promise<void> {
  if (g.monitor.verified) return;
  g.log.info({ wait_ms: ms, state: g.monitor.state }, "waiting for llama-server to come back");
  const back = await g.monitor.waitForServer(ms, signal);
  if (signal.aborted) throw cancelled("cancelled while waiting for llama-server");
  if (!back) {
    throw new RpcError(
      Status.UNAVAILABLE,
      `llama-server at ${g.upstream} did not come back within ${Math.round(ms / 100) / 10} s (state: ${g.monitor.state})`,
      { upstream: g.upstream, reason: ErrorReason.SERVER_DOWN, retryAfterMs: g.retryAfterMs },
    );
  }
}
