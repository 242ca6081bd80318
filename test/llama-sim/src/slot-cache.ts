// Slots: each holds the tokens of its KV cache and runs one task at a time.
// llama-server defers a task aimed at a busy slot until the slot frees up;
// the per-slot wait queue mirrors that.

import { commonPrefixLength } from "./tokens.js";

export interface SlotTaskInfo {
  idTask: number;
  nPromptTokens: number;
  nPromptTokensProcessed: number;
  nPromptTokensCache: number;
  nDecoded: number;
  params: Record<string, unknown>;
}

export class Slot {
  /** The token pieces the slot's cache holds. */
  tokens: string[] = [];
  lastUsed = 0;
  processing = false;
  /** Requests that arrived for this slot and have not finished (waiting or running). */
  inFlight = 0;
  maxInFlight = 0;
  lastTask: SlotTaskInfo | undefined;
  private waiters: Array<() => void> = [];
  private idleWaiters: Array<() => void> = [];

  constructor(
    readonly id: number,
    readonly nCtx: number,
  ) {}

  get idle(): boolean {
    return !this.processing && this.waiters.length === 0;
  }

  /** Count a request against this slot from arrival to finish, whether it waits or runs. */
  arrive(): () => void {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.inFlight--;
    };
  }

  /**
   * Wait for the slot. Resolves to a release function, or to undefined when
   * the signal aborts first (the client went away while queued).
   */
  async acquire(signal?: AbortSignal): Promise<(() => void) | undefined> {
    if (signal?.aborted) return undefined;
    if (this.processing) {
      const granted = await new Promise<boolean>((resolve) => {
        const grant = () => {
          signal?.removeEventListener("abort", onAbort);
          resolve(true);
        };
        const onAbort = () => {
          this.waiters = this.waiters.filter((w) => w !== grant);
          resolve(false);
        };
        this.waiters.push(grant);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
      if (!granted) return undefined;
    }
    this.processing = true;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.lastUsed = performance.now();
      const next = this.waiters.shift();
      if (next) {
        // Ownership passes straight to the next waiter: nobody can slip in between.
        next();
        return;
      }
      this.processing = false;
      const idle = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of idle) w();
    };
  }

  waitIdle(): Promise<void> {
    if (!this.processing) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Tokens of `prompt` already in the cache. At least one token is always re-processed, as llama.cpp does. */
  cachedPrefix(prompt: readonly string[]): number {
    const common = commonPrefixLength(this.tokens, prompt);
    return Math.max(0, Math.min(common, prompt.length - 1));
  }

  erase(): number {
    const n = this.tokens.length;
    this.tokens = [];
    return n;
  }

  resetState(): void {
    this.tokens = [];
    this.maxInFlight = this.inFlight;
    this.lastTask = undefined;
  }
}

/**
 * Slot choice: an explicit id wraps around the slot count (as the real server
 * accepts it); otherwise the least recently used idle slot, or the least
 * recently used one when all are busy.
 */
export function pickSlot(slots: readonly Slot[], idSlot: number | undefined): Slot {
  if (slots.length === 0) throw new Error("no slots");
  if (idSlot !== undefined && idSlot >= 0) return slots[idSlot % slots.length]!;
  const idle = slots.filter((s) => s.idle);
  const pool = idle.length > 0 ? idle : slots;
  return pool.reduce((a, b) => (b.lastUsed < a.lastUsed ? b : a));
}
