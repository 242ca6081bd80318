/** How a retry delay grows: from `initialMs`, times `factor` per attempt, never above `maxMs`. */
export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
  /** Default 2 (doubling). */
  factor?: number;
}

/**
 * The delay before retry `attempt` (0-based): the one exponential backoff the
 * stack uses (MCP reconnects in brokerd, daemon restarts under `boxmaker up`).
 */
export function backoffDelay(p: BackoffPolicy, attempt: number): number {
  // Capped exponent: 2 ** 1024 is Infinity, and no delay needs more than 30 doublings.
  const grown = p.initialMs * (p.factor ?? 2) ** Math.min(Math.max(0, attempt), 30);
  return Math.round(Math.min(p.maxMs, grown));
}
