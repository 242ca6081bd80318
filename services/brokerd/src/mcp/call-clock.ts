/** Why a call's clock ended it. */
class CallLimitReached extends Error {
  constructor(readonly limit: "idle" | "total") {
    super(limit === "idle" ? "no answer within the call's timeout" : "over the call's total time limit");
  }
}

/**
 * One MCP call's two limits on brokerd's clock: silence (`idleMs`, restarted
 * by each progress notification) and the total (`totalMs`). Both stop while a
 * person is being asked something for the call (an elicitation): the server
 * is waiting on the person then, not hanging, and a form can take minutes.
 * The SDK's own timeouts cannot be paused, so calls are given this one.
 */
export class CallClock {
  private readonly ac = new AbortController();
  private idleTimer: NodeJS.Timeout | undefined;
  private totalTimer: NodeJS.Timeout | undefined;
  private totalLeft: number;
  private runningSince: number;
  private holds = 0;

  constructor(
    private readonly idleMs: number,
    totalMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.totalLeft = totalMs;
    this.runningSince = now();
    this.arm();
  }

  get signal(): AbortSignal {
    return this.ac.signal;
  }

  /** Which limit fired, if one did. */
  get reached(): "idle" | "total" | undefined {
    const r = this.ac.signal.reason;
    return r instanceof CallLimitReached ? r.limit : undefined;
  }

  /** The server said it is still working: the silence limit starts again. */
  progress(): void {
    if (this.holds || this.ac.signal.aborted) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.fire("idle"), this.idleMs);
  }

  /** Stops both limits until the returned function is called (each hold once). */
  hold(): () => void {
    if (this.holds++ === 0) {
      this.totalLeft -= this.now() - this.runningSince;
      this.clear();
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.holds === 0 && !this.ac.signal.aborted) {
        this.runningSince = this.now();
        this.arm();
      }
    };
  }

  dispose(): void {
    this.clear();
  }

  private arm(): void {
    this.idleTimer = setTimeout(() => this.fire("idle"), this.idleMs);
    this.totalTimer = setTimeout(() => this.fire("total"), Math.max(0, this.totalLeft));
  }

  private clear(): void {
    clearTimeout(this.idleTimer);
    clearTimeout(this.totalTimer);
  }

  private fire(limit: "idle" | "total"): void {
    this.clear();
    this.ac.abort(new CallLimitReached(limit));
  }
}
