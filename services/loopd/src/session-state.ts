import { DEFAULT_MODE, type PermissionMode } from "@boxmaker/common";
import { LogCorruptError } from "./errors.js";
import type { LogRecord, SessionRoleName, ToolMeta } from "./session-log.js";

export interface StoredMessage {
  epoch: number;
  /** The exact JSON text of the message, as sent to or received from the server. */
  json: string;
  at: number;
  /** Repeated from an earlier epoch by compaction; history shows it once. */
  carried?: true;
  tool?: ToolMeta;
}

export interface Epoch {
  epoch: number;
  systemJson: string;
  toolsJson: string;
}

/** A session as its log describes it. Derived, never stored: the log is the truth. */
export interface SessionState {
  id: string;
  role: SessionRoleName;
  title: string;
  parentId: string;
  slot: number;
  createdAt: number;
  updatedAt: number;
  epoch: Epoch;
  /** Every message of every epoch, for history. */
  history: StoredMessage[];
  turn: number;
  /** A turn_start without its turn_end: the daemon died mid-turn. */
  turnOpen: boolean;
  lastTurnEnd: string;
  archived: boolean;
  contextTokens: number;
  /** Notes recorded since the last turn started; the next turn's user message carries them. */
  pendingNotes: string[];
  /** What its tool calls are decided under; a log without a mode record is in the default. */
  mode: PermissionMode;
}

export function foldRecords(records: readonly LogRecord[]): SessionState {
  const head = records[0];
  if (head?.t !== "session") throw new LogCorruptError("session log does not start with a session record");
  const s: SessionState = {
    id: head.id,
    role: head.role,
    title: head.title,
    parentId: head.parent_id,
    slot: head.slot,
    createdAt: head.at,
    updatedAt: head.at,
    epoch: { epoch: 0, systemJson: "", toolsJson: "[]" },
    history: [],
    turn: 0,
    turnOpen: false,
    lastTurnEnd: "",
    archived: false,
    contextTokens: 0,
    pendingNotes: [],
    mode: DEFAULT_MODE,
  };
  for (const r of records) applyRecord(s, r);
  return s;
}

export function applyRecord(s: SessionState, r: LogRecord): void {
  s.updatedAt = r.at;
  switch (r.t) {
    case "session":
      break;
    case "epoch":
      s.epoch = { epoch: r.epoch, systemJson: r.system_json, toolsJson: r.tools_json };
      // Unknown until the server reads the new epoch.
      s.contextTokens = 0;
      break;
    case "message":
      s.history.push({
        epoch: r.epoch,
        json: r.json,
        at: r.at,
        ...(r.carried ? { carried: r.carried } : {}),
        ...(r.tool ? { tool: r.tool } : {}),
      });
      if (r.context_tokens !== undefined) s.contextTokens = r.context_tokens;
      break;
    case "turn_start":
      s.turn = r.turn;
      s.turnOpen = true;
      s.pendingNotes = [];
      break;
    case "note":
      s.pendingNotes.push(r.text);
      break;
    case "turn_end":
      s.turnOpen = false;
      s.lastTurnEnd = r.reason;
      if (r.context_tokens !== undefined) s.contextTokens = r.context_tokens;
      break;
    case "usage":
      s.contextTokens = r.context_tokens;
      break;
    case "archived":
      s.archived = true;
      break;
    case "renamed":
      s.title = r.title;
      break;
    case "mode":
      s.mode = r.mode;
      break;
  }
}

/**
 * What a damaged log can still show: the records before the damage (or, when
 * even those do not make a session, only its id and time), titled with what
 * is wrong, and never running.
 */
export function quarantinedState(
  validPrefix: readonly LogRecord[],
  why: string,
  fallback: () => { id: string; at: number },
): SessionState {
  let s: SessionState;
  try {
    s = foldRecords(validPrefix);
  } catch {
    const { id, at } = fallback();
    s = foldRecords([{ t: "session", id, role: "main", title: "", parent_id: "", slot: 0, at }]);
  }
  return { ...s, title: `[damaged, read-only: ${why}]${s.title ? ` ${s.title}` : ""}`, turnOpen: false };
}

/** Messages of the current epoch, in order. */
export function epochMessages(s: SessionState): StoredMessage[] {
  return s.history.filter((m) => m.epoch === s.epoch.epoch);
}

/** Index of the last assistant message (the model's latest answer), -1 when there is none. */
export function lastAssistantIndex(messages: readonly StoredMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    if ((JSON.parse(messages[i]!.json) as { role?: string }).role === "assistant") return i;
  }
  return -1;
}
