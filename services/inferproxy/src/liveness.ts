/**
 * A silence watchdog: fires once if `kick()` is not called within `windowMs`.
 * One timer is re-armed with `refresh()` per chunk rather than a new timer per
 * token, so a fast stream costs next to nothing.
 */
export class Watchdog {
  private timer: NodeJS.Timeout | undefined;
  private last = performance.now();
  private fired = false;

  constructor(
    readonly windowMs: number,
    private readonly onSilence: (silentMs: number) => void,
  ) {
    this.timer = setTimeout(() => this.expire(), windowMs);
  }

  kick(): void {
    if (!this.timer) return;
    this.last = performance.now();
    this.timer.refresh();
  }

  /** Milliseconds since the last sign of life. */
  get silentMs(): number {
    return performance.now() - this.last;
  }

  get hasFired(): boolean {
    return this.fired;
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private expire(): void {
    this.timer = undefined;
    this.fired = true;
    this.onSilence(this.silentMs);
  }
}
