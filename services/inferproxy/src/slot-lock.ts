/** Releases a slot; calling it twice is harmless. */
export type Release = () => void;

interface Waiter {
  holder: string;
  grant: (release: Release) => void;
}

interface SlotState {
  holder: string | undefined;
  waiters: Waiter[];
}

export interface SlotHolding {
  slot: number;
  heldBy: string;
  waiting: number;
}

/**
 * One in-flight request per llama-server slot, waiters served first come first
 * served. Two requests on one slot would make the server evict one prompt for
 * the other and throw away the KV cache the session depends on.
 */
export class SlotLocks {
  private readonly slots = new Map<number, SlotState>();

  acquire(slot: number, holder: string, signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const st = this.state(slot);
    if (st.holder === undefined) {
      st.holder = holder;
      return Promise.resolve(this.releaser(slot));
    }
    return new Promise<Release>((resolve, reject) => {
      const waiter: Waiter = {
        holder,
        grant: (release) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(release);
        },
      };
      const onAbort = () => {
        const i = st.waiters.indexOf(waiter);
        if (i >= 0) st.waiters.splice(i, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      st.waiters.push(waiter);
    });
  }

  holding(slot: number): SlotHolding {
    const st = this.slots.get(slot);
    return { slot, heldBy: st?.holder ?? "", waiting: st?.waiters.length ?? 0 };
  }

  private state(slot: number): SlotState {
    let st = this.slots.get(slot);
    if (!st) {
      st = { holder: undefined, waiters: [] };
      this.slots.set(slot, st);
    }
    return st;
  }

  private releaser(slot: number): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const st = this.state(slot);
      const next = st.waiters.shift();
      if (next) {
        st.holder = next.holder;
        next.grant(this.releaser(slot));
      } else {
        st.holder = undefined;
      }
    };
  }
}
