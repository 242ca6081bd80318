import type { ClientOf, Compacted, InferService, Logger } from "@boxmaker/common";
import { EmptySummaryError } from "./errors.js";
import { buildMessagesJson } from "./epoch-view.js";
import { epochMessages, type SessionState, type StoredMessage } from "./session-state.js";
import { boundFolds, compactedSystemJson, foldBlock, foldCount, foldsOf } from "./folds.js";
import { clippedTranscript, needsCompaction, quarterContextBytes, recentToKeep } from "./compaction-policy.js";
import { systemMessageJson, userMessageJson } from "./messages.js";
import type { Session } from "./session.js";
import { blobRefs } from "./prepass/index.js";
import { bytesPerToken, isMeasured, tokensSinceAnswer } from "./token-counts.js";

export interface CompactionSettings {
  /** Compact when the next request would fill more than this share of the slot's context. */
  threshold: number;
  keep_recent_messages: number;
}

const SUMMARY_REQUEST =
  "[Boxmaker compaction] The conversation is about to outgrow the context window. Write a concise summary of " +
  "everything above that you will need to continue: the task, decisions, facts learned, file paths, blob pointers " +
  "(blob:sha256:…) and open questions. Quote exact values; do not call tools.";

const SUMMARY_REQUEST_AFTER_FOLDS =
  "[Boxmaker compaction] The conversation is about to outgrow the context window. The summary in the system prompt " +
  "is kept as it is. Write a concise summary of only the conversation after it: the task, decisions, facts learned, " +
  "file paths, blob pointers (blob:sha256:…) and open questions. Quote exact values; do not call tools.";

/**
 * What a compaction did: the generated Compacted event (loop.proto is the one
 * definition of its fields), its reason narrowed to the four there are.
 */
export type CompactResult = Omit<Compacted, "$typeName" | "$unknown" | "reason"> & {
  /** auto: near the context; large: the new messages alone do not fit; overflow: the server refused; request: a person asked. */
  reason: "auto" | "large" | "overflow" | "request";
};

/** Spills large blocks of a message text to the blob store (the inbound pre-pass with a given threshold). */
export type Spill = (
  s: Session,
  text: string,
  thresholdBytes: number,
  signal: AbortSignal,
) => Promise<{ text: string; blocks: number }>;

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

  constructor(
    private readonly infer: Pick<ClientOf<typeof InferService>, "complete" | "status">,
    private readonly log: Logger,
    private readonly settings: CompactionSettings,
    /** A function: read at each new epoch (project instructions may have changed). */
    private readonly systemPrompt: string | (() => string),
    private readonly maxTokens: number,
    private readonly spill?: Spill,
  ) {}

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
    const since = tokensSinceAnswer(st);
    const nCtx = await this.slotContext(st.slot, signal);
    if (!needsCompaction(st.contextTokens, since, this.maxTokens, nCtx, this.settings.threshold)) return undefined;
    // What was appended since the last answer does not fit by itself (by the server's counts so far): spill it now.
    if (isMeasured(st) && needsCompaction(0, since, this.maxTokens, nCtx, this.settings.threshold))
      return this.compact(s, signal, "large");
    // Never compact a session whose history is only the new message: there is nothing to fold.
    const messages = epochMessages(st);
    if (recentToKeep(messages, this.settings.keep_recent_messages).length === messages.length) return undefined;
    return this.compact(s, signal, "auto");
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
    let spilled = 0;
    const keptJson: string[] = [];
    const spillAbove =
      (reason === "overflow" || reason === "large") && nCtx
        ? Math.max(2_048, quarterContextBytes(nCtx, bytesPerToken(st)))
        : 0;
    for (const m of kept) {
      let json = m.json;
      if (spillAbove && this.spill && Buffer.byteLength(json) > spillAbove) {
        const msg = JSON.parse(json) as { role?: string; content?: unknown };
        if (typeof msg.content === "string" && (msg.role === "user" || msg.role === "tool")) {
          const r = await this.spill(s, msg.content, spillAbove, signal);
          if (r.blocks) {
            spilled += r.blocks;
            msg.content = r.text;
            json = JSON.stringify(msg);
          }
        }
      }
      keptJson.push(json);
    }
    if (folded.length === 0 && spilled === 0) return undefined;

    const carried = boundFolds(foldsOf(st.epoch.systemJson), nCtx ? quarterContextBytes(nCtx, bytesPerToken(st)) : 0);
    let folds = carried;
    let summaryBytes = 0;
    if (folded.length) {
      const summary = await this.summarise(st, folded, carried, nCtx, reason !== "auto", signal);
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

  private async summarise(
    st: SessionState,
    folded: readonly StoredMessage[],
    carried: string,
    nCtx: number,
    mayNotFit: boolean,
    signal: AbortSignal,
  ): Promise<string> {
    const request = carried ? SUMMARY_REQUEST_AFTER_FOLDS : SUMMARY_REQUEST;
    const base = buildMessagesJson(st);
    const wholeTokens = Math.ceil(Buffer.byteLength(base) / bytesPerToken(st));
    const fits = nCtx === 0 || (!mayNotFit && wholeTokens + 1024 + Math.min(this.maxTokens, 4096) < nCtx);
    let messagesJson: string;
    let toolsJson = st.epoch.toolsJson;
    if (fits) {
      // Reuses the slot's cached prefix: costs only the instruction and the answer.
      messagesJson = `${base.slice(0, -1)},${userMessageJson(request)}]`;
    } else {
      // A transcript of the turns to fold, clipped to half the context.
      const lines = clippedTranscript(folded, Math.floor((nCtx * bytesPerToken(st)) / 2));
      const earlier = carried ? `Earlier summary (kept as it is, do not repeat it):\n${carried}\n\n` : "";
      messagesJson = `[${systemMessageJson(this.promptNow())},${userMessageJson(
        `${earlier}Conversation to summarise:\n${lines.join("\n")}\n\n${request}`,
      )}]`;
      toolsJson = "";
    }
    let text = "";
    for await (const ev of this.infer.complete(
      {
        slot: st.slot,
        messagesJson,
        toolsJson,
        maxTokens: Math.min(this.maxTokens, 4096),
        thinkingCapTokens: 512,
        requestId: `${st.id}/compaction`,
      },
      { signal },
    )) {
      if (ev.event.case === "final") text = ev.event.value.content;
    }
    if (!text.trim()) throw new EmptySummaryError();
    return text.trim();
  }
}
