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

export interface ParkingStats {
  saves: number;
  restores: number;
  restoreHits: number;
  restoreMisses: number;
  /** Parked files erased: their session was deleted or archived, or they were left from before a restart. */
  erased: number;
}

/**
 * Where a session's parked cache goes in llama-server's slot-save directory.
 * The name is the whole mapping between sessions and files, so it survives a
 * restart on disk without an index: listing the directory (inferproxy's
 * SlotFiles) says which sessions have a parked cache, and a file whose
 * session no longer exists is recognised as an orphan.
 */
export const parkedFileOf = (sessionId: string): string => `boxmaker-${sessionId}.bin`;

/** The session a parked file belongs to; undefined for anything else in the directory. */
export function sessionOfParkedFile(filename: string): string | undefined {
  const m = /^boxmaker-(.+)\.bin$/.exec(filename);
  return m?.[1];
}

/** Whether a session still wants its parked cache: archived and deleted sessions run no more turns. */
export type ParkedStanding = "live" | "archived" | "gone";

type SlotApi = Pick<ClientOf<typeof InferService>, "slotAction" | "slotFiles">;

/**
 * When a slot passes from one session to another, the leaving session's KV
 * cache is saved (llama-server's slot save) and restored when it returns, so
 * its next request costs only its new tokens. Correctness never depends on
 * it: every request still carries the whole prompt, and a restore that did
 * not hold only costs a re-read, which is measured and logged.
 *
 * The files are gigabytes each, so none outlives its use: a session deleted
 * or archived has its file erased, a failed save erases what it may have left
 * half-written, and at start-up `reconcile` erases the files of sessions that
 * no longer exist (and learns the rest back). inferproxy caps the directory's
 * size; what its cap erased is dropped here too.
 */
export class Parking {
  private readonly occupant = new Map<number, string>();
  /** Sessions with a parked file; the file name is `parkedFileOf(session)`. */
  private readonly saved = new Set<string>();
  private readonly expected = new Map<string, number>();
  /** Saves under way, by session: a session deleted meanwhile waits for its save before erasing the file. */
  private readonly saving = new Map<string, Promise<void>>();
  /** Files that could not be erased yet (inferproxy was down): tried again on the next slot work. */
  private readonly pendingErase = new Set<string>();
  readonly stats: ParkingStats = { saves: 0, restores: 0, restoreHits: 0, restoreMisses: 0, erased: 0 };

  constructor(
    private readonly infer: SlotApi,
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

  /** Whether a parked file of the session is known to exist. */
  hasParked(sessionId: string): boolean {
    return this.saved.has(sessionId);
  }

  /** Called once a session holds `slot` and before its first request of the turn. */
  async arrive(slot: number, sessionId: string, signal: AbortSignal): Promise<void> {
    const previous = this.occupant.get(slot);
    if (previous === sessionId) return;
    this.occupant.set(slot, sessionId);
    if (!this.enabled) return;
    if (this.pendingErase.size) await this.erase([...this.pendingErase]);
    if (previous) await this.track(previous, this.save(slot, previous, signal));
    if (this.saved.has(sessionId)) await this.restore(slot, sessionId, signal);
  }

  /**
   * The session was deleted or archived: its cache is never wanted again.
   * The slot no longer counts as holding it (so no later arrival saves it)
   * and its parked file is erased, after any save of it still under way.
   */
  async forget(sessionId: string): Promise<void> {
    for (const [slot, s] of this.occupant) if (s === sessionId) this.occupant.delete(slot);
    await this.saving.get(sessionId);
    this.saved.delete(sessionId);
    this.expected.delete(sessionId);
    // Also without parking on: a file from a run that had it on is as dead.
    await this.erase([parkedFileOf(sessionId)]);
  }

  /**
   * At start-up: erases the files of sessions that are gone or archived and,
   * with parking on, learns back which live sessions have one, so a loopd
   * restart costs no re-read. Throws when inferproxy cannot be asked (the
   * caller tries again later). Returns what it found.
   */
  async reconcile(
    standing: (sessionId: string) => ParkedStanding,
    signal?: AbortSignal,
  ): Promise<{ erased: number; kept: number; managed: boolean }> {
    const listing = await this.infer.slotFiles({}, { signal, waitForReady: true, timeoutMs: 30_000 });
    if (!listing.managed) {
      this.log.info({ why: listing.unmanagedReason }, "parked slot files are not managed here; nothing reconciled");
      return { erased: 0, kept: 0, managed: false };
    }
    const orphans: string[] = [];
    let kept = 0;
    for (const f of listing.files) {
      const id = sessionOfParkedFile(f.filename);
      if (id === undefined) continue;
      // A session this run parked already is known; one created and parked since the listing is not in it.
      if (this.saved.has(id) || this.saving.has(id)) continue;
      if (standing(id) !== "live" || this.pendingErase.has(f.filename)) {
        orphans.push(f.filename);
      } else if (this.enabled) {
        this.saved.add(id);
        kept++;
      }
    }
    const erased = orphans.length ? await this.erase(orphans) : 0;
    this.log.info(
      { erased, kept, files: listing.files.length, bytes: Number(listing.totalBytes) },
      "parked slot files reconciled with the sessions",
    );
    return { erased, kept, managed: true };
  }

  private async track(sessionId: string, work: Promise<void>): Promise<void> {
    this.saving.set(sessionId, work);
    try {
      await work;
    } finally {
      if (this.saving.get(sessionId) === work) this.saving.delete(sessionId);
    }
  }

  private async save(slot: number, sessionId: string, signal: AbortSignal): Promise<void> {
    const filename = parkedFileOf(sessionId);
    try {
      const r = await this.infer.slotAction({ slot, action: SlotActionKind.SAVE, filename }, { signal });
      this.saved.add(sessionId);
      // A file an earlier failed save left to erase is this good one now.
      this.pendingErase.delete(filename);
      this.stats.saves++;
      this.log.info(
        { slot, session: sessionId, tokens: r.tokens, bytes: Number(r.bytes), ms: r.ms },
        "parked session cache",
      );
      this.dropEvicted(r.evicted);
    } catch (err) {
      this.saved.delete(sessionId);
      if (err instanceof RpcError && err.status === Status.UNIMPLEMENTED) {
        // The server was started without --slot-save-path: every later try would fail the same way.
        this.enabled = false;
        this.log.warn(
          { err: err.message },
          "parking turned off: llama-server does not save slots (start it with --slot-save-path)",
        );
        return;
      }
      this.log.warn({ slot, session: sessionId, err: messageOf(err) }, "could not park session cache");
      // The save may have overwritten the earlier file in part: nothing restores from it now.
      await this.erase([filename]);
    }
  }

  /** The size cap erased these after a save: their sessions re-read their prompt when they return. */
  private dropEvicted(evicted: readonly string[]): void {
    for (const f of evicted) {
      const id = sessionOfParkedFile(f);
      if (id !== undefined) this.saved.delete(id);
    }
    if (evicted.length) this.log.info({ evicted }, "parked caches erased by the slot-save size cap");
  }

  private async restore(slot: number, sessionId: string, signal: AbortSignal): Promise<void> {
    const filename = parkedFileOf(sessionId);
    try {
      const r = await this.infer.slotAction({ slot, action: SlotActionKind.RESTORE, filename }, { signal });
      this.stats.restores++;
      this.expected.set(sessionId, r.tokens);
      this.log.info({ slot, session: sessionId, tokens: r.tokens, ms: r.ms }, "restored session cache");
    } catch (err) {
      this.log.warn({ slot, session: sessionId, err: messageOf(err) }, "could not restore session cache");
      // The server refused the file (missing, or not a save it can load): it is no use to anyone.
      if (err instanceof RpcError && err.status === Status.FAILED_PRECONDITION) {
        this.saved.delete(sessionId);
        await this.erase([filename]);
      }
    }
  }

  /** Erases parked files; what cannot be erased now is tried again on the next slot work. Never throws. */
  private async erase(filenames: string[]): Promise<number> {
    try {
      // A local directory: seconds at most, and deleting a session waits for it.
      const r = await this.infer.slotFiles({ erase: filenames }, { timeoutMs: 10_000 });
      for (const f of filenames) this.pendingErase.delete(f);
      this.stats.erased += r.erased;
      return r.erased;
    } catch (err) {
      const status = err instanceof RpcError ? err.status : undefined;
      if (status === Status.FAILED_PRECONDITION || status === Status.INVALID_ARGUMENT) {
        // Not managed by inferproxy (llama-server elsewhere): retrying cannot help, and saying so each time neither.
        this.log.debug({ files: filenames.length, err: messageOf(err) }, "parked slot files not erased");
        return 0;
      }
      for (const f of filenames) this.pendingErase.add(f);
      this.log.warn({ files: filenames.length, err: messageOf(err) }, "could not erase parked slot files; will retry");
      return 0;
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
