import type { SessionRoleName } from "./session-log.js";

export type SlotMap = Record<SessionRoleName, number>;

export const DEFAULT_SLOTS: SlotMap = { main: 0, subagent: 1, scheduled: 2 };

export interface SlotWait {
  slot: number;
  /** Turns ahead of this one, including the running one. */
  position: number;
  heldBy: string;
}

interface Waiter {
  sessionId: string;
  grant: () => void;
  /** Tells the waiting turn its current place in the queue. */
  report: () => void;
}

/**
 * One running turn per llama-server slot; others wait in arrival order. A
 * turn keeps its slot across tool calls so no other session can evict its
 * prompt cache mid-turn.
 */
export class SlotScheduler {
  private readonly holders = new Map<number, string>();
  private readonly queues = new Map<number, Waiter[]>();

  holder(slot: number): string | undefined {
    return this.holders.get(slot);
  }

  queued(slot: number): string[] {
    return (this.queues.get(slot) ?? []).map((w) => w.sessionId);
  }

  /**
   * Resolves with a release function once `sessionId` holds `slot`.
   * `onWait` is told each time its place in the queue changes.
   */
  async acquire(
    slot: number,
    sessionId: string,
    signal: AbortSignal,
    onWait: (w: SlotWait) => void = () => undefined,
  ): Promise<() => void> {
    signal.throwIfAborted();
    if (!this.holders.has(slot)) {
      this.holders.set(slot, sessionId);
      return this.releaser(slot, sessionId);
    }
    const queue = this.queues.get(slot) ?? [];
    this.queues.set(slot, queue);
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const i = queue.indexOf(waiter);
        if (i >= 0) queue.splice(i, 1);
        for (const w of queue) w.report();
        reject(signal.reason ?? new Error("aborted"));
      };
      const waiter: Waiter = {
        sessionId,
        grant: () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
        report: () => {
          const i = queue.indexOf(waiter);
          if (i >= 0) onWait({ slot, position: i + 1, heldBy: this.holders.get(slot) ?? "" });
        },
      };
      queue.push(waiter);
      waiter.report();
      signal.addEventListener("abort", onAbort, { once: true });
    });
    return this.releaser(slot, sessionId);
  }

  private releaser(slot: number, sessionId: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (this.holders.get(slot) !== sessionId) return;
      const queue = this.queues.get(slot) ?? [];
      const next = queue.shift();
      if (!next) {
        this.holders.delete(slot);
        return;
      }
      this.holders.set(slot, next.sessionId);
      next.grant();
      for (const w of queue) w.report();
    };
  }
}
