import { backoffDelay } from "@boxmaker/common/lite";
/**
 * When to restart a daemon that died, and after how long. The same shape as
 * systemd's Restart=/RestartSec=/StartLimitBurst=/StartLimitIntervalSec= in
 * deploy/systemd, so a stack behaves alike under `boxmaker up` and systemd:
 * a bounded number of restarts within a sliding window, with exponential
 * backoff, and none at all for exit statuses a restart cannot fix.
 */
export interface RestartPolicyOptions {
  initialDelayMs: number;
  maxDelayMs: number;
  factor: number;
  /** Restarts allowed within `windowMs`; one more exit in the window gives up. */
  maxRestarts: number;
  windowMs: number;
  /** The daemons exit 2 on a bad config file (runMain in @boxmaker/common). */
  noRestartExitCodes: readonly number[];
}

export const DEFAULT_RESTART_POLICY: RestartPolicyOptions = {
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  factor: 2,
  maxRestarts: 5,
  windowMs: 5 * 60_000,
  noRestartExitCodes: [2],
};

export interface ExitInfo {
  code: number | null;
  signal: string | null;
}

export type RestartDecision =
  | { restart: true; delayMs: number; attempt: number; of: number }
  | { restart: false; reason: string };

export class RestartPolicy {
  /** Times of the restarts still inside the window. */
  private recent: number[] = [];

  constructor(readonly options: RestartPolicyOptions = DEFAULT_RESTART_POLICY) {}

  decide(exit: ExitInfo, now: number): RestartDecision {
    const o = this.options;
    if (exit.code !== null && o.noRestartExitCodes.includes(exit.code)) {
      return { restart: false, reason: `a restart cannot fix status ${exit.code} (a bad config or argument)` };
    }
    this.recent = this.recent.filter((t) => now - t < o.windowMs);
    if (this.recent.length >= o.maxRestarts) {
      return {
        restart: false,
        reason: `died ${o.maxRestarts + 1} times within ${formatDuration(o.windowMs)}; giving up`,
      };
    }
    // Backoff grows with the restarts still in the window, so a daemon that
    // has been stable for a whole window starts again from the initial delay.
    const attempt = this.recent.length + 1;
    this.recent.push(now);
    const delayMs = backoffDelay({ initialMs: o.initialDelayMs, maxMs: o.maxDelayMs, factor: o.factor }, attempt - 1);
    return { restart: true, delayMs, attempt, of: o.maxRestarts };
  }
}

export function describeExit(exit: ExitInfo): string {
  return exit.signal ? `killed by ${exit.signal}` : `exited with status ${exit.code}`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${+(ms / 1000).toFixed(1)} s`;
  return `${+(ms / 60_000).toFixed(1)} min`;
}
