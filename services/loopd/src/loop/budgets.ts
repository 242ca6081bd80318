/** Per-turn limits; 0 means unlimited. */
export interface BudgetLimits {
  max_iterations: number;
  max_total_tokens: number;
  max_wall_ms: number;
  max_thinking_tokens: number;
}

export type BudgetName = "iterations" | "total_tokens" | "wall_ms" | "thinking_tokens";

export interface Breach {
  budget: BudgetName;
  limit: number;
  used: number;
}

/**
 * Counts what a turn has spent. Pure: the loop feeds it figures and asks
 * before each request whether another one is allowed.
 */
export class TurnBudget {
  iterations = 0;
  totalTokens = 0;
  thinkingTokens = 0;
  private readonly startedAt: number;
  /** Time spent waiting for a person (an approval): it does not count against the wall clock. */
  private pausedMs = 0;
  private pausedAt: number | undefined;

  constructor(
    readonly limits: BudgetLimits,
    private readonly now: () => number = Date.now,
  ) {
    this.startedAt = now();
  }

  get wallMs(): number {
    const now = this.now();
    return now - this.startedAt - this.pausedMs - (this.pausedAt === undefined ? 0 : now - this.pausedAt);
  }

  /** Stops the wall clock (a person is being asked); nested calls are not supported. */
  pauseWall(): void {
    if (this.pausedAt === undefined) this.pausedAt = this.now();
  }

  resumeWall(): void {
    if (this.pausedAt === undefined) return;
    this.pausedMs += this.now() - this.pausedAt;
    this.pausedAt = undefined;
  }

  /** Milliseconds left on the wall clock, or undefined when unlimited. */
  wallRemainingMs(): number | undefined {
    return this.limits.max_wall_ms ? Math.max(0, this.limits.max_wall_ms - this.wallMs) : undefined;
  }

  /** Records one model request's cost: every token the server had to process or produce. */
  recordRequest(promptN: number, predictedN: number, reasoningTokens: number): void {
    this.iterations++;
    this.totalTokens += promptN + predictedN;
    this.thinkingTokens += reasoningTokens;
  }

  /** The first limit that forbids another request, if any. */
  beforeRequest(): Breach | undefined {
    const { max_iterations, max_total_tokens, max_wall_ms } = this.limits;
    if (max_iterations && this.iterations >= max_iterations)
      return { budget: "iterations", limit: max_iterations, used: this.iterations };
    if (max_total_tokens && this.totalTokens >= max_total_tokens)
      return { budget: "total_tokens", limit: max_total_tokens, used: this.totalTokens };
    if (max_wall_ms && this.wallMs >= max_wall_ms) return { budget: "wall_ms", limit: max_wall_ms, used: this.wallMs };
    return undefined;
  }

  /**
   * max_tokens for the next request: the configured per-request maximum, capped
   * so that the request's estimated new prompt tokens plus everything it may
   * generate fit in what the token budget has left. 0: nothing is left, the
   * request must not be made.
   */
  maxTokensForNextRequest(perRequestMax: number, newPromptTokens: number): number {
    const cap = this.limits.max_total_tokens;
    if (!cap) return perRequestMax;
    return Math.max(0, Math.min(perRequestMax, cap - this.totalTokens - Math.max(0, newPromptTokens)));
  }

  /** What the thinking cap for the next request should be (remaining thinking budget), 0 = none. */
  thinkingCapForNextRequest(): number {
    const cap = this.limits.max_thinking_tokens;
    if (!cap) return 0;
    return Math.max(1, cap - this.thinkingTokens);
  }
}

export function mergeLimits(base: BudgetLimits, override: Partial<BudgetLimits> | undefined): BudgetLimits {
  const out = { ...base };
  if (override) {
    for (const k of Object.keys(base) as (keyof BudgetLimits)[]) {
      const v = override[k];
      if (typeof v === "number" && v > 0) out[k] = v;
    }
  }
  return out;
}
