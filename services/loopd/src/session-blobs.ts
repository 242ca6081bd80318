import { Status, messageOf, toRpcError, type BrokerService, type ClientOf, type Logger } from "@boxmaker/common";
import { epochBlobRefs } from "./sessions/epoch-view.js";
import { BlobHashMismatchError, BlobStoreUnavailable } from "./errors.js";
import { prepass, type PrepassResult } from "./prepass/index.js";
import type { Session } from "./sessions/session.js";

/**
 * A session's side of brokerd's blob store: large input goes there (the
 * pre-pass), and what the current epoch points at is pinned so it is never
 * evicted while the session may still read it.
 */
export class SessionBlobs {
  /** What brokerd was last told each session pins (its refs, joined). */
  private readonly pinned = new Map<string, string>();

  constructor(
    private readonly broker: Pick<ClientOf<typeof BrokerService>, "putBlob" | "pinBlobs">,
    private readonly log: Logger,
    private readonly excerptBytes: number,
  ) {}

  /**
   * The pre-pass with its blobs stored: each spilled block goes to brokerd,
   * which returns the same hash. When brokerd refuses it, the text goes on
   * whole (an overflow is then recovered from like any other); when brokerd
   * is not there at all, the turn fails before anything is logged, naming it.
   */
  async spill(s: Session, text: string, thresholdBytes: number, signal: AbortSignal): Promise<PrepassResult> {
    const r = prepass(text, { threshold_bytes: thresholdBytes, excerpt_bytes: this.excerptBytes });
    try {
      for (const b of r.blocks) {
        const put = await this.broker.putBlob({ sessionId: s.id, text: b.text }, { signal, timeoutMs: 30_000 });
        if (put.sha256 !== b.hash) throw new BlobHashMismatchError(put.sha256, b.hash);
      }
    } catch (err) {
      signal.throwIfAborted();
      const status = toRpcError(err).status;
      // brokerd away (its peer wait ran out): say so, rather than send what only fits as blobs.
      if (status === Status.UNAVAILABLE || status === Status.DEADLINE_EXCEEDED)
        throw new BlobStoreUnavailable(Buffer.byteLength(text), messageOf(err));
      this.log.warn(
        { session: s.id, err: messageOf(err) },
        "could not spill input to the blob store; sending it whole",
      );
      return { text, blocks: [] };
    }
    if (r.blocks.length) {
      this.log.info(
        {
          session: s.id,
          blocks: r.blocks.map((b) => ({
            blob: b.hash,
            kind: b.kind,
            bytes: b.bytes,
            shown_bytes: b.shownBytes,
            form: b.form,
          })),
        },
        "input spilled to the blob store",
      );
    }
    return r;
  }

  /**
   * Pins the blobs the session's current epoch names (none once archived);
   * best effort. brokerd keeps pins on disk, so a set it already holds is not
   * sent again: most turns change nothing, and a call per turn cost both
   * daemons CPU on the hot path.
   */
  pin(s: Session): void {
    const st = s.state;
    const refs = st.archived ? [] : epochBlobRefs(st);
    const key = refs.join(",");
    if (this.pinned.get(s.id) === key) return;
    this.pinned.set(s.id, key);
    this.broker.pinBlobs({ owner: s.id, sha256: refs }, { timeoutMs: 5_000 }).catch((err: unknown) => {
      this.pinned.delete(s.id); // sent again after the next turn
      // A pin refused for the store's cap is the operator's to see: those blobs may be evicted.
      const refused = toRpcError(err).status === Status.RESOURCE_EXHAUSTED;
      this.log[refused ? "warn" : "debug"]({ session: s.id, err: messageOf(err) }, "could not pin blobs");
    });
  }

  /** A session made in this run of loopd: brokerd has no pins for it, so an empty set need not be sent. */
  pinsNothing(sessionId: string): void {
    this.pinned.set(sessionId, "");
  }

  /** A deleted session pins nothing: its blobs may be evicted like any unpinned one. */
  release(sessionId: string): void {
    this.pinned.delete(sessionId);
    this.broker.pinBlobs({ owner: sessionId, sha256: [] }, { timeoutMs: 5_000 }).catch((err: unknown) => {
      this.log.debug({ session: sessionId, err: messageOf(err) }, "could not release blobs");
    });
  }
}
