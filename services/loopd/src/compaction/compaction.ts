import type { ClientOf, Compacted, InferService, Logger } from "@boxmaker/common";
import { epochMessages, type SessionState } from "../sessions/session-state.js";
import { boundFolds, compactedSystemJson, foldBlock, foldCount, foldsOf } from "./folds.js";
import { needsCompaction, quarterContextBytes, recentToKeep } from "./compaction-policy.js";
import type { Session } from "../sessions/session.js";
import { blobRefs } from "../prepass/index.js";
import { bytesPerToken, isMeasured, tokensSinceAnswer } from "../sessions/token-counts.js";
import { messageText } from "./compaction-fit.js";
import { ServerTokens } from "./server-tokens.js";
import { shrinkKept, type Spill } from "./compaction-shrink.js";
import { summarise } from "./compaction-summary.js";

export interface CompactionSettings {
  /** Compact when the next request would fill more than this share of the slot's context. */
  threshold: number;
  keep_recent_messages: number;
}

/**
 * What a compaction did: the generated Compacted event (loop.proto is the one
 * definition of its fields), its reason narrowed to the four there are.
 */
export type CompactResult = Omit<Compacted, "$typeName" | "$unknown" | "reason"> & {
  /** auto: near the context; large: the new messages alone do not fit; overflow: the server refused; request: a person asked. */
  reason: "auto" | "large" | "overflow" | "request";
};

/** What was appended since the last answer is counted by the server past this many bytes (below, the estimate is cheap and harmless). */
const COUNT_SINCE_ABOVE_BYTES = 4_096;

/** Tokens a message costs beyond its text (the template's role markers), as token-counts.ts reckons. */
const PER_MESSAGE_TOKENS = 9;

/**
 * Starts a new epoch. Old turns are folded once into a marked block; on
 * re-growth the earlier folds are carried verbatim and only the newer turns
 * are summarised. The model summarises with a request that reuses the whole
 * cached prefix when that fits, else from a clipped transcript. The recent
 * messages are carried verbatim, except that after an overflow a message too
 * big for the context is spilled to the blob store. Old epochs stay in the log.
 */
export class Compactor {
  private nCtx = new Map<number, number>();
  /** Counts by the server's tokenizer; the runner's baseline prompt counts with it too (one warning, not two). */
  readonly tokens: ServerTokens;

  constructor(
    private readonly infer: Pick<ClientOf<typeof InferService>, "complete" | "status" | "countTokens">,
    private readonly log: Logger,
    private readonly settings: CompactionSettings,
    /** A function: read at each new epoch (project instructions may have changed). */
    private readonly systemPrompt: string | (() => string),
    private readonly maxTokens: number,
    private readonly spill?: Spill,
  ) {
    this.tokens = new ServerTokens(infer, log);
  }

  private promptNow(): string {
    return typeof this.systemPrompt === "function" ? this.systemPrompt() : this.systemPrompt;
  }

  async slotContext(slot: number, signal: AbortSignal): Promise<number> {
    let n = this.nCtx.get(slot);
    if (n === undefined) {
      const st = await this.infer.status({}, { signal, timeoutMs: 5_000 });
      n = st.slots.find((x) => x.id === slot)?.nCtx || st.selfTest?.actualNCtx || 0;
      if (n) this.nCtx.set(slot, n);
    }
    return n;
  }

  /** Compacts when the next request would come too close to the slot's context size, and there are old turns to fold. */
  async maybeCompact(s: Session, signal: AbortSignal): Promise<CompactResult | undefined> {
    const st = s.state;
    // Asked before every request: from the epoch's running tallies, without walking its messages.
    let since = tokensSinceAnswer(st);
    const nCtx = await this.slotContext(st.slot, signal);
    // Much appended (a tool result): the server counts it, as bytes say little about digits.
    const counted =
      nCtx && st.view.sinceAnswer.bytes > COUNT_SINCE_ABOVE_BYTES ? await this.countSince(st, signal) : undefined;
    if (counted !== undefined) since = counted;
    if (!needsCompaction(st.contextTokens, since, this.maxTokens, nCtx, this.settings.threshold)) return undefined;
    // What was appended since the last answer does not fit by itself (by the server's counts): spill it now.
    if (
      (counted !== undefined || isMeasured(st)) &&
      needsCompaction(0, since, this.maxTokens, nCtx, this.settings.threshold)
    )
      return this.compactOrGoOn(s, signal, "large");
    // Never compact a session whose history is only the new message: there is nothing to fold.
    const messages = epochMessages(st);
    if (recentToKeep(messages, this.settings.keep_recent_messages).length === messages.length) return undefined;
    return this.compactOrGoOn(s, signal, "auto");
  }

  /**
   * A compaction before a request that fails is not the turn's end: the request
   * goes as it is, and if the server refuses it, the overflow is recovered from
   * with the count the refusal carries (recover). A compaction that failed the
   * turn would fail every later turn the same way.
   */
  private async compactOrGoOn(
    s: Session,
    signal: AbortSignal,
    reason: "auto" | "large",
  ): Promise<CompactResult | undefined> {
    try {
      return await this.compact(s, signal, reason);
    } catch (err) {
      signal.throwIfAborted();
      this.log.warn(
        { session: s.id, reason, err: err instanceof Error ? err.message : String(err) },
        "compaction failed; the request goes as it is",
      );
      return undefined;
    }
  }

  /** The server's count of what was appended since the last answer, with each message's role markers. */
  private async countSince(st: SessionState, signal: AbortSignal): Promise<number | undefined> {
    const n = st.view.sinceAnswer.count;
    const since = n ? epochMessages(st).slice(-n) : [];
    const counts = await this.tokens.texts(
      since.map((m) => messageText(m.json)),
      signal,
    );
    return counts?.reduce((a, c) => a + c + PER_MESSAGE_TOKENS, 0);
  }

  /** After the server refused a prompt as too long: fold and spill whatever makes it fit. */
  recover(s: Session, signal: AbortSignal): Promise<CompactResult | undefined> {
    return this.compact(s, signal, "overflow");
  }

  async compact(
    s: Session,
    signal: AbortSignal,
    reason: CompactResult["reason"] = "auto",
  ): Promise<CompactResult | undefined> {
    const st = s.state;
    const before = st.contextTokens;
    const nCtx = await this.slotContext(st.slot, signal).catch(() => 0);
    const messages = epochMessages(st);
    // After an overflow, or asked by a person, everything but the last turn is folded.
    const keep = reason === "auto" ? this.settings.keep_recent_messages : 0;
    let kept = recentToKeep(messages, keep);
    if (reason === "request" && kept.length === messages.length) kept = [];
    const folded = messages.slice(0, messages.length - kept.length);

    // After an overflow (or before one), a carried message bigger than a quarter of the context goes to the blob store.
    const shrinking = (reason === "overflow" || reason === "large") && nCtx > 0;
    const carriedMessages = shrinking
      ? await shrinkKept({ tokens: this.tokens, spill: this.spill }, s, kept, nCtx, signal)
      : { json: kept.map((m) => m.json), spilled: 0, cut: 0 };
    const keptJson = carriedMessages.json;
    const spilled = carriedMessages.spilled;
    if (folded.length === 0 && spilled === 0 && carriedMessages.cut === 0) return undefined;

    const carried = boundFolds(foldsOf(st.epoch.systemJson), nCtx ? quarterContextBytes(nCtx, bytesPerToken(st)) : 0);
    let folds = carried;
    let summaryBytes = 0;
    if (folded.length) {
      const summary = await summarise(
        { infer: this.infer, tokens: this.tokens, systemPrompt: () => this.promptNow(), maxTokens: this.maxTokens },
        { st, folded, carried, nCtx, mayNotFit: reason !== "auto" },
        signal,
      );
      summaryBytes = Buffer.byteLength(summary);
      const blobs = blobRefs([carried, ...folded.map((m) => m.json)].join("\n")).filter((b) => !carried.includes(b));
      const block = foldBlock(foldCount(carried) + 1, st.epoch.epoch, folded.length, summary, blobs);
      folds = carried ? `${carried}\n\n${block}` : block;
    }
    const epoch = s.recordCompaction(
      folds ? compactedSystemJson(this.promptNow(), folds) : st.epoch.systemJson,
      keptJson,
    );
    const out: CompactResult = {
      epoch,
      reason,
      beforeTokens: before,
      foldedMessages: folded.length,
      keptMessages: kept.length,
      summaryBytes,
      carriedFoldBytes: Buffer.byteLength(carried),
      spilledBlocks: spilled,
    };
    this.log.info({ session: s.id, ...out }, "compacted into a new epoch");
    s.events.publish({ case: "compacted", value: out });
    return out;
  }
}
