import {
  RpcError,
  SlotActionKind,
  Status,
  messageOf,
  type ClientOf,
  type FinalMessage,
  type InferService,
  type Logger,
} from "@boxmaker/common";

interface Saved {
  filename: string;
  tokens: number;
}

export interface ParkingStats {
  saves: number;
  restores: number;
  restoreHits: number;
  restoreMisses: number;
}

/**
 * When a slot passes from one session to another, the leaving session's KV
 * cache is saved (llama-server's slot save) and restored when it returns, so
 * its next request costs only its new tokens. Correctness never depends on
 * it: every request still carries the whole prompt, and a restore that did
 * not hold only costs a re-read, which is measured and logged.
 */
export class Parking {
  private readonly occupant = new Map<number, string>();
  private readonly saved = new Map<string, Saved>();
  private readonly expected = new Map<string, number>();
  readonly stats: ParkingStats = { saves: 0, restores: 0, restoreHits: 0, restoreMisses: 0 };

  constructor(
    private readonly infer: Pick<ClientOf<typeof InferService>, "slotAction">,
    private readonly log: Logger,
    private enabled: boolean,
  ) {}

  get on(): boolean {
    return this.enabled;
  }

  /** The session whose cache the slot holds now. */
  occupantOf(slot: number): string | undefined {
    return this.occupant.get(slot);
  }

  /** Called once a session holds `slot` and before its first request of the turn. */
  async arrive(slot: number, sessionId: string, signal: AbortSignal): Promise<void> {
    const previous = this.occupant.get(slot);
    if (previous === sessionId) return;
    this.occupant.set(slot, sessionId);
    if (!this.enabled) return;
    if (previous) await this.save(slot, previous, signal);
    const mine = this.saved.get(sessionId);
    if (mine) await this.restore(slot, sessionId, mine, signal);
  }

  private async save(slot: number, sessionId: string, signal: AbortSignal): Promise<void> {
    const filename = `boxmaker-${sessionId}.bin`;
    try {
      const r = await this.infer.slotAction({ slot, action: SlotActionKind.SAVE, filename }, { signal });
      this.saved.set(sessionId, { filename, tokens: r.tokens });
      this.stats.saves++;
      this.log.info({ slot, session: sessionId, tokens: r.tokens, ms: r.ms }, "parked session cache");
    } catch (err) {
      this.saved.delete(sessionId);
      if (err instanceof RpcError && err.code === Status.UNIMPLEMENTED) {
        // The server was started without --slot-save-path: every later try would fail the same way.
        this.enabled = false;
        this.log.warn(
          { err: err.message },
          "parking turned off: llama-server does not save slots (start it with --slot-save-path)",
        );
        return;
      }
      this.log.warn({ slot, session: sessionId, err: messageOf(err) }, "could not park session cache");
    }
  }

  private async restore(slot: number, sessionId: string, saved: Saved, signal: AbortSignal): Promise<void> {
    try {
      const r = await this.infer.slotAction(
        { slot, action: SlotActionKind.RESTORE, filename: saved.filename },
        { signal },
      );
      this.stats.restores++;
      this.expected.set(sessionId, r.tokens);
      this.log.info({ slot, session: sessionId, tokens: r.tokens, ms: r.ms }, "restored session cache");
    } catch (err) {
      this.log.warn({ slot, session: sessionId, err: messageOf(err) }, "could not restore session cache");
    }
  }

  /** Checks from the server's own figures that a restore really held. */
  verify(sessionId: string, final: FinalMessage): void {
    const expected = this.expected.get(sessionId);
    if (expected === undefined) return;
    this.expected.delete(sessionId);
    const cacheN = final.timings?.cacheN ?? 0;
    if (cacheN + 1 >= expected) {
      this.stats.restoreHits++;
    } else {
      this.stats.restoreMisses++;
      this.log.warn(
        { session: sessionId, restored_tokens: expected, cache_n: cacheN, reread_tokens: final.timings?.promptN },
        "restored cache did not hold; the server re-read the prompt",
      );
    }
  }
}
