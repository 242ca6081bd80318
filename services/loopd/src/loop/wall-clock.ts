import type { TurnBudget } from "./budgets.js";
import { WallBudgetExceeded } from "../errors.js";

/**
 * A turn's wall-clock budget as an abort signal, so it also stops a request
 * that is still streaming. The signal fires when the budget runs out or the
 * turn is cancelled; time spent waiting for a person does not count.
 */
export class WallClock {
  private readonly ac = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private holds = 0;
  private readonly onTurnAbort = () => this.ac.abort(this.turn.reason);

  constructor(
    private readonly budget: TurnBudget,
    private readonly turn: AbortSignal,
  ) {
    turn.addEventListener("abort", this.onTurnAbort);
    this.arm();
  }

  get signal(): AbortSignal {
    return this.ac.signal;
  }

  /** True when the budget, not the operator, stopped the turn. */
  get ranOut(): boolean {
    return this.ac.signal.reason instanceof WallBudgetExceeded;
  }

  /**
   * Runs `wait` with the clock stopped (a person is being asked). Waits may
   * overlap (a server asks during a call an approval started): the clock runs
   * again when the last one ends.
   */
  async paused<T>(wait: () => Promise<T>): Promise<T> {
    if (this.holds++ === 0) {
      clearTimeout(this.timer);
      this.budget.pauseWall();
    }
    try {
      return await wait();
    } finally {
      if (--this.holds === 0) {
        this.budget.resumeWall();
        this.arm();
      }
    }
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.turn.removeEventListener("abort", this.onTurnAbort);
  }

  private arm(): void {
    const remaining = this.budget.wallRemainingMs();
    this.timer =
      remaining === undefined ? undefined : setTimeout(() => this.ac.abort(new WallBudgetExceeded()), remaining);
  }
}
