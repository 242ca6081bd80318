import { ToolDecision, type SessionEvent } from "@boxmaker/common/client";
import { columns, cut } from "./columns.js";
import { sizeText } from "./turn-event-text.js";

/**
 * What a turn is doing right now, folded from its events: the state behind
 * the live status line (live-line.ts draws it). Pure: an event and the time
 * in, the next state out; the line's text from a state, the time and a width.
 */
type Phase =
  | { kind: "starting" }
  | { kind: "slot"; slot: number; position: number; heldBy: string }
  | { kind: "prompt"; processed: number; total: number }
  | { kind: "thinking" }
  | { kind: "answering" }
  | { kind: "tool-writing"; name: string; bytes: number }
  | { kind: "approval"; name: string; proposalId: string }
  | { kind: "question"; server: string; name: string; id: string }
  | { kind: "tool-running"; name: string }
  | { kind: "server"; attempt: number; maxAttempts: number };

export interface Activity {
  phase: Phase;
  /** When the turn began (ms, the caller's clock). */
  startedMs: number;
  /** The slot the turn runs on, once loopd said. */
  slot?: number;
  /** Tokens generated so far in the turn (reasoning and answer; the server streams one per delta). */
  tokens: number;
  /** The current request's first token and the turn's count before it: tokens/s is this request's rate. */
  rateFromMs?: number;
  rateBase: number;
  /** The latest request's prompt as the server counted it: tokens reused from its cache, of the whole prompt. */
  cache?: { reused: number; total: number };
  /** Calls by id, for naming the tool that runs after its decision. */
  calls: Record<string, string>;
}

export function startActivity(nowMs: number): Activity {
  return { phase: { kind: "starting" }, startedMs: nowMs, tokens: 0, rateBase: 0, calls: {} };
}

/** The state after one event. */
export function nextActivity(a: Activity, ev: SessionEvent, nowMs: number): Activity {
  const e = ev.event;
  const token = (phase: Phase): Activity => ({
    ...a,
    phase,
    tokens: a.tokens + 1,
    ...(a.rateFromMs === undefined ? { rateFromMs: nowMs, rateBase: a.tokens } : {}),
  });
  // A new request: its rate is measured afresh.
  const request = (phase: Phase): Activity => {
    const { rateFromMs: _, ...rest } = a;
    return { ...rest, phase, rateBase: a.tokens };
  };
  switch (e.case) {
    case "turnStarted":
      return { ...a, slot: e.value.slot };
    case "waiting":
      return {
        ...a,
        phase: { kind: "slot", slot: e.value.slot, position: e.value.position, heldBy: e.value.heldBySession },
      };
    case "progress":
      return {
        ...request({ kind: "prompt", processed: e.value.processed, total: e.value.total }),
        cache: { reused: e.value.cache, total: e.value.total },
      };
    case "reasoning":
      return token({ kind: "thinking" });
    case "content":
      return token({ kind: "answering" });
    case "toolCallProgress":
      return { ...a, phase: { kind: "tool-writing", name: e.value.name, bytes: Number(e.value.argumentBytes) } };
    case "toolCall":
      return { ...a, calls: { ...a.calls, [e.value.callId]: e.value.name }, phase: { kind: "starting" } };
    case "toolDecision": {
      const name = a.calls[e.value.callId] ?? "tool";
      if (e.value.decision === ToolDecision.STAGED)
        return { ...a, phase: { kind: "approval", name, proposalId: e.value.proposalId } };
      if (e.value.decision === ToolDecision.ALLOWED) return { ...a, phase: { kind: "tool-running", name } };
      return a;
    }
    case "elicitation": {
      const q = e.value.event;
      if (q.case === "asked")
        return { ...a, phase: { kind: "question", server: q.value.server, name: q.value.tool, id: q.value.id } };
      if (q.case === "ended" && a.phase.kind === "question" && a.phase.id === q.value.id)
        return { ...a, phase: { kind: "tool-running", name: a.phase.name } };
      return a;
    }
    case "toolResult":
      // The result goes back to the model: the next request is on its way.
      return request({ kind: "starting" });
    case "retry":
      if (e.value.phase === "resent") {
        const cached = e.value.promptCached;
        return {
          ...request({ kind: "starting" }),
          cache: { reused: cached, total: cached + e.value.promptReread },
        };
      }
      return request({ kind: "server", attempt: e.value.attempt, maxAttempts: e.value.maxAttempts });
    case "turnDone": {
      const t = e.value.timings;
      if (!t) return a;
      return { ...a, cache: { reused: t.cacheN, total: t.cacheN + t.promptN } };
    }
    default:
      return a;
  }
}

/** What the phase says, first on the line. */
function phaseText(p: Phase): string {
  switch (p.kind) {
    case "starting":
      return "waiting for the model";
    case "slot":
      return `waiting for slot ${p.slot}: ${p.position} ahead (held by ${p.heldBy})`;
    case "prompt":
      return `reading the prompt ${p.processed.toLocaleString("en-US")}/${p.total.toLocaleString("en-US")}`;
    case "thinking":
      return "thinking";
    case "answering":
      return "writing the answer";
    // The same words as the line a tool call grew on before there was a status line.
    case "tool-writing":
      return `┌ ${p.name} writing… ${sizeText(p.bytes)}`;
    case "approval":
      return `waiting for approval of ${p.name} (${p.proposalId})`;
    case "question":
      return `waiting for an answer to MCP server "${p.server}" (${p.name})`;
    case "tool-running":
      return `running ${p.name}`;
    case "server":
      return `waiting for the server (retry ${p.attempt}/${p.maxAttempts})`;
  }
}

const seconds = (ms: number) =>
  ms < 60_000 ? `${Math.floor(ms / 1000)} s` : `${Math.floor(ms / 60_000)} min ${Math.floor((ms % 60_000) / 1000)} s`;

/**
 * The status line: the phase, then the figures in the order they matter
 * (elapsed, tokens, rate, cache, slot, the key hint). Fitted to `width`
 * columns less one (a line in the last column would wrap, and a wrapped
 * line cannot be redrawn in place): figures drop from the end, then the
 * phase is cut. Undefined width (a test, no terminal) keeps everything.
 */
export function activityLine(a: Activity, nowMs: number, width?: number, hint?: string): string {
  const parts = [phaseText(a.phase), seconds(Math.max(0, nowMs - a.startedMs))];
  if (a.tokens > 0) parts.push(`${a.tokens.toLocaleString("en-US")} tok`);
  if (a.rateFromMs !== undefined && nowMs - a.rateFromMs >= 500)
    parts.push(`${(((a.tokens - a.rateBase) * 1000) / (nowMs - a.rateFromMs)).toFixed(1)} tok/s`);
  if (a.cache) parts.push(`cache ${a.cache.reused.toLocaleString("en-US")}/${a.cache.total.toLocaleString("en-US")}`);
  if (a.slot !== undefined) parts.push(`slot ${a.slot}`);
  if (hint) parts.push(hint);
  if (width === undefined) return parts.join(" · ");
  const room = Math.max(1, width - 1);
  while (parts.length > 1 && columns(parts.join(" · ")) > room) parts.pop();
  return cut(parts.join(" · "), room);
}
