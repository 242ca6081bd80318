import type { ClientOf, InferService, Logger } from "@boxmaker/common";
import { RpcError, Status } from "@boxmaker/common";
import { buildMessagesJson } from "./replay.js";
import { epochMessages, type SessionState, type StoredMessage } from "./session-state.js";
import { systemMessageJson, userMessageJson } from "./messages.js";
import type { Session } from "./session-store.js";

export interface CompactionSettings {
  /** Compact when the next request would fill more than this share of the slot's context. */
  threshold: number;
  keep_recent_messages: number;
}

export const SUMMARY_REQUEST =
  "[Boxmaker compaction] The conversation is about to outgrow the context window. Write a concise summary of " +
  "everything above that you will need to continue: the task, decisions, facts learned, file paths, blob pointers " +
  "(blob:sha256:…) and open questions. Quote exact values; do not call tools.";

/** Roughly how many tokens a JSON message text adds; deliberately pessimistic (3 bytes per token). */
export const estimateTokens = (json: string) => Math.ceil(Buffer.byteLength(json) / 3) + 8;

/**
 * Whether the next request might overflow: what the slot held after the last
 * response (the server's own count) plus an estimate of what was appended
 * since, plus room for the answer.
 */
export function needsCompaction(
  contextTokens: number,
  appendedSince: readonly StoredMessage[],
  maxTokens: number,
  nCtx: number,
  threshold: number,
): boolean {
  if (!nCtx) return false;
  const next = contextTokens + appendedSince.reduce((a, m) => a + estimateTokens(m.json), 0);
  return next + Math.min(maxTokens, nCtx / 4) > nCtx * threshold;
}

/**
 * The messages kept verbatim in the new epoch: the most recent ones, starting
 * at a user message so no tool result is separated from its call.
 */
export function recentToKeep(messages: readonly StoredMessage[], keep: number): StoredMessage[] {
  const roles = messages.map((m) => (JSON.parse(m.json) as { role?: string }).role);
  const lastUser = roles.lastIndexOf("user");
  let start = Math.max(0, messages.length - keep);
  while (start < messages.length && roles[start] !== "user") start++;
  // The running turn is never cut: its question must survive into the new epoch.
  if (lastUser >= 0) start = Math.min(start, lastUser);
  return messages.slice(start);
}

export function compactedSystemJson(systemPrompt: string, summary: string): string {
  return systemMessageJson(`${systemPrompt}\n\n## Summary of the earlier conversation\n${summary}`);
}

/**
 * Starts a new epoch: the model summarises the old one (a request that reuses
 * the whole cached prefix, so it costs only the instruction and the answer),
 * then the log records the boundary, the new system prompt with the summary,
 * and the recent messages again, verbatim. Old epochs stay in the log for
 * history; artifacts stay in the blob store behind their pointers.
 */
export class Compactor {
  private nCtx = new Map<number, number>();

  constructor(
    private readonly infer: Pick<ClientOf<typeof InferService>, "complete" | "status">,
    private readonly log: Logger,
    private readonly settings: CompactionSettings,
    private readonly systemPrompt: string,
    private readonly maxTokens: number,
  ) {}

  async slotContext(slot: number, signal: AbortSignal): Promise<number> {
    let n = this.nCtx.get(slot);
    if (n === undefined) {
      const st = await this.infer.status({}, { signal, timeoutMs: 5_000 });
      n = st.slots.find((x) => x.id === slot)?.nCtx || st.selfTest?.actualNCtx || 0;
      if (n) this.nCtx.set(slot, n);
    }
    return n;
  }

  /** Compacts when the next request would come too close to the slot's context size. */
  async maybeCompact(s: Session, signal: AbortSignal): Promise<boolean> {
    const nCtx = await this.slotContext(s.state.slot, signal);
    const messages = epochMessages(s.state);
    const since = messages.slice(lastAssistantIndex(messages) + 1);
    if (!needsCompaction(s.state.contextTokens, since, this.maxTokens, nCtx, this.settings.threshold)) return false;
    await this.compact(s, signal);
    return true;
  }

  async compact(s: Session, signal: AbortSignal): Promise<void> {
    const st = s.state;
    const before = st.contextTokens;
    const summary = await this.summarise(st, signal);
    const kept = recentToKeep(epochMessages(st), this.settings.keep_recent_messages);
    const epoch = st.epoch.epoch + 1;
    const at = Date.now();
    s.append({
      t: "epoch",
      epoch,
      system_json: compactedSystemJson(this.systemPrompt, summary),
      tools_json: st.epoch.toolsJson,
      summary_of_seq: s.log.length,
      at,
    });
    for (const m of kept) s.append({ t: "message", epoch, json: m.json, at, carried: true });
    // Unknown until the server reads the new epoch; the estimate restarts from zero.
    st.contextTokens = 0;
    this.log.info({ session: s.id, epoch, before_tokens: before, kept: kept.length }, "compacted into a new epoch");
  }

  private async summarise(st: SessionState, signal: AbortSignal): Promise<string> {
    const base = buildMessagesJson(st);
    const messagesJson = `${base.slice(0, -1)},${userMessageJson(SUMMARY_REQUEST)}]`;
    let text = "";
    for await (const ev of this.infer.complete(
      {
        slot: st.slot,
        messagesJson,
        toolsJson: st.epoch.toolsJson,
        maxTokens: Math.min(this.maxTokens, 4096),
        thinkingCapTokens: 512,
        requestId: `${st.id}/compaction`,
      },
      { signal },
    )) {
      if (ev.event.case === "final") text = ev.event.value.content;
    }
    if (!text.trim()) throw new RpcError(Status.INTERNAL, "compaction failed: the model returned an empty summary");
    return text.trim();
  }
}

export function lastAssistantIndex(messages: readonly StoredMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    if ((JSON.parse(messages[i]!.json) as { role?: string }).role === "assistant") return i;
  }
  return -1;
}
