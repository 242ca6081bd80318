import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { atomicWrite, messageOf } from "@boxmaker/common";
import { instructionsFileOf } from "../project-instructions.js";
import type { SessionState } from "./session-state.js";

/**
 * What `ls` and status show of a session: enough to list it without reading
 * its log. loopd keeps these for sessions it has not needed since it started
 * (a year of use is thousands of logs; most are never opened again).
 */
export type SessionSummary = Pick<
  SessionState,
  | "id"
  | "role"
  | "title"
  | "parentId"
  | "slot"
  | "createdAt"
  | "updatedAt"
  | "turn"
  | "turnOpen"
  | "lastTurnEnd"
  | "archived"
  | "contextTokens"
  | "mode"
> & {
  epoch: number;
  /** Messages a person sees (carried copies of an earlier epoch not counted). */
  messages: number;
  /** Tool calls without a result: such a session is read whole at start, to be answered. */
  openToolCalls: number;
  instructionsFile: string;
};

export function summarize(st: SessionState): SessionSummary {
  return {
    id: st.id,
    role: st.role,
    title: st.title,
    parentId: st.parentId,
    slot: st.slot,
    createdAt: st.createdAt,
    updatedAt: st.updatedAt,
    epoch: st.epoch.epoch,
    messages: st.history.filter((m) => !m.carried).length,
    turn: st.turn,
    turnOpen: st.turnOpen,
    openToolCalls: st.view.openToolCallCount,
    lastTurnEnd: st.lastTurnEnd,
    archived: st.archived,
    contextTokens: st.contextTokens,
    mode: st.mode,
    instructionsFile: instructionsFileOf(st.epoch.systemJson),
  };
}

/**
 * Every summary field and the type of its value: a Record, so a field added
 * to SessionSummary and not here does not compile. The index's version is
 * derived from it, so an index written with other fields (an older loopd's,
 * where a new field would read as undefined) is never taken for this one's.
 */
const SUMMARY_SHAPE: Record<keyof SessionSummary, "string" | "number" | "boolean"> = {
  id: "string",
  role: "string",
  title: "string",
  parentId: "string",
  slot: "number",
  createdAt: "number",
  updatedAt: "number",
  epoch: "number",
  messages: "number",
  turn: "number",
  turnOpen: "boolean",
  openToolCalls: "number",
  lastTurnEnd: "string",
  archived: "boolean",
  contextTokens: "number",
  mode: "string",
  instructionsFile: "string",
};

/** The index's version: its shape's, so it changes with the shape and with nothing else. */
export const INDEX_VERSION = `summary-${createHash("sha256")
  .update(JSON.stringify(Object.entries(SUMMARY_SHAPE).sort(([a], [b]) => (a < b ? -1 : 1))))
  .digest("hex")
  .slice(0, 12)}`;

function isSummary(v: unknown): v is SessionSummary {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  return Object.entries(SUMMARY_SHAPE).every(([k, type]) => typeof o[k] === type);
}

/** One log file as the index knows it: its size and mtime when summarised, and the summary. */
interface IndexEntry {
  size: number;
  mtime_ms: number;
  summary: SessionSummary;
}

/**
 * `sessions/index.json`: the summaries of every log as of loopd's last clean
 * stop. A log whose size or mtime differs (a crash, a hand edit, a copy) is
 * read whole at start, as is one the index does not know; the log stays the
 * truth and the index only saves reading what did not change. Nothing here is
 * trusted beyond that: an unreadable index is the same as none.
 */
export class SessionIndex {
  private readonly entries = new Map<string, IndexEntry>();

  constructor(private readonly path: string) {}

  /** Loads the index; returns why it was ignored, if it was. */
  load(): string | undefined {
    let raw: string;
    try {
      raw = readFileSync(this.path, "utf8");
    } catch {
      return undefined; // none yet
    }
    try {
      const data = JSON.parse(raw) as { version?: unknown; files?: Record<string, IndexEntry> };
      // Another shape's summaries would lack fields or mean others: its logs are read whole, and the next clean stop writes this one.
      if (data.version !== INDEX_VERSION) return `version ${JSON.stringify(data.version)}, not ${INDEX_VERSION}`;
      if (typeof data.files !== "object" || data.files === null) return "unknown format";
      for (const [file, e] of Object.entries(data.files)) {
        if (typeof e?.size === "number" && typeof e.mtime_ms === "number" && isSummary(e.summary))
          this.entries.set(file, e);
      }
      return undefined;
    } catch (err) {
      return messageOf(err);
    }
  }

  /** The summary of `file` if the log is exactly as it was when summarised and no turn was open. */
  unchanged(file: string, size: number, mtimeMs: number): SessionSummary | undefined {
    const e = this.entries.get(file);
    if (!e || e.size !== size || e.mtime_ms !== mtimeMs || e.summary.turnOpen || e.summary.openToolCalls)
      return undefined;
    return e.summary;
  }

  /** Writes the summaries of these logs, each with its file's current size and mtime. */
  save(logs: Iterable<{ file: string; path: string; summary: SessionSummary }>): void {
    const files: Record<string, IndexEntry> = {};
    for (const l of logs) {
      const st = statSync(l.path, { throwIfNoEntry: false });
      if (st) files[l.file] = { size: st.size, mtime_ms: st.mtimeMs, summary: l.summary };
    }
    atomicWrite(this.path, JSON.stringify({ version: INDEX_VERSION, files }));
  }
}
