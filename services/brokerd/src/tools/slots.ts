/**
 * A counting semaphore with a bounded queue: `acquire` resolves to a release
 * function when a slot is free, or to undefined at once when `maxWaiting`
 * callers already wait (a refusal the caller words). An aborted waiter leaves
 * the queue and rejects with the signal's reason.
 */
export class Slots {
  private active = 0;
  private readonly queue: Array<() => void> = [];

  constructor(
    readonly size: number,
    readonly maxWaiting: number,
  ) {}

  get running(): number {
    return this.active;
  }

  get waiting(): number {
    return this.queue.length;
  }

  acquire(signal?: AbortSignal): Promise<(() => void) | undefined> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.active < this.size) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    if (this.queue.length >= this.maxWaiting) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      const wake = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(this.releaser());
      };
      const onAbort = () => {
        const i = this.queue.indexOf(wake);
        if (i >= 0) this.queue.splice(i, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.queue.push(wake);
    });
  }

  /** Hands the slot straight to the next waiter, so a newcomer cannot take it in between. */
  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.queue.shift();
      if (next) next();
      else this.active--;
    };
  }
}
