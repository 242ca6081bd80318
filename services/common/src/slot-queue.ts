/** Gives a held slot back (to the next waiter, if any); calling it twice is harmless. */
export type Release = () => void;

/** Where a waiting holder stands: `position` counts the turns ahead of it, the running one included. */
export interface QueuePlace {
  slot: number;
  position: number;
  heldBy: string;
}

interface Waiter {
  holder: string;
  grant: (release: Release) => void;
  report: () => void;
}

/**
 * One holder per llama-server slot, the others served first come, first
 * served. Both daemons need exactly this: inferproxy holds a slot for one
 * request (two requests on a slot make the server evict one prompt for the
 * other), loopd for a whole turn (so no other session evicts its prompt cache
 * between tool calls). A waiter that aborts leaves the queue, and the ones
 * behind it learn their new place.
 */
export class SlotQueue {
  private readonly holders = new Map<number, string>();
  private readonly queues = new Map<number, Waiter[]>();

  holder(slot: number): string | undefined {
    return this.holders.get(slot);
  }

  /** The holders waiting for `slot`, in the order they will get it. */
  waiting(slot: number): string[] {
    return (this.queues.get(slot) ?? []).map((w) => w.holder);
  }

  /** Resolves with the release once `holder` holds `slot`; `onWait` hears each change of its place. */
  acquire(
    slot: number,
    holder: string,
    signal?: AbortSignal,
    onWait: (place: QueuePlace) => void = () => undefined,
  ): Promise<Release> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (!this.holders.has(slot)) {
      this.holders.set(slot, holder);
      return Promise.resolve(this.releaser(slot, holder));
    }
    let queue = this.queues.get(slot);
    if (!queue) {
      queue = [];
      this.queues.set(slot, queue);
    }
    const q = queue;
    return new Promise<Release>((resolve, reject) => {
      const onAbort = () => {
        const i = q.indexOf(waiter);
        if (i >= 0) q.splice(i, 1);
        for (const w of q) w.report();
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        holder,
        grant: (release) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(release);
        },
        report: () => {
          const i = q.indexOf(waiter);
          if (i >= 0) onWait({ slot, position: i + 1, heldBy: this.holders.get(slot) ?? "" });
        },
      };
      q.push(waiter);
      waiter.report();
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  private releaser(slot: number, holder: string): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (this.holders.get(slot) !== holder) return;
      const queue = this.queues.get(slot) ?? [];
      const next = queue.shift();
      if (!next) {
        this.holders.delete(slot);
        this.queues.delete(slot);
        return;
      }
      this.holders.set(slot, next.holder);
      next.grant(this.releaser(slot, next.holder));
      for (const w of queue) w.report();
    };
  }
}
