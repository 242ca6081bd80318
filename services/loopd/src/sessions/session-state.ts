import { DEFAULT_MODE, type PermissionMode } from "@boxmaker/common";
import { EpochView } from "./epoch-view.js";
import { LogCorruptError } from "../errors.js";
import type { LogRecord, SessionRoleName } from "./log-record.js";
import { replayTextOf } from "./replay.js";
import type { StoredMessage } from "./stored-message.js";

export type { StoredMessage } from "./stored-message.js";

export interface Epoch {
  epoch: number;
  systemJson: string;
  toolsJson: string;
}

/**
 * What inferproxy and the server said about this process's requests. Not in
 * the log, so not folded: lost on a restart by design. The next request then
 * sends the whole messages array, and estimates are pessimistic until the
 * server has counted a prompt again.
 */
export interface Served {
  /** The token inferproxy gave an array of the current epoch's first `count` messages (sent-prefix.ts). */
  sent?: { count: number; token: string };
  /** The last prompt the server counted: the bytes sent and the tokens it found in them (token-counts.ts). */
  measured?: { bytes: number; tokens: number };
}

/**
 * A session as its log describes it. Derived, never stored: the log is the
 * truth. Only applyRecord changes it, `served` apart (see there).
 */
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
  /** The current epoch as its requests need it, kept up to date by applyRecord. */
  view: EpochView;
  served: Served;
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
    view: new EpochView(0, ""),
    served: {},
    history: [],
    turn: 0,
    turnOpen: false,
    lastTurnEnd: "",
    archived: false,
    contextTokens: 0,
    pendingNotes: [],
    mode: DEFAULT_MODE,
  };
  for (const [i, r] of records.entries()) {
    if (!Object.hasOwn(KINDS, r.t)) {
      // A newer loopd's record may change what this one would act on (a mode, say): show, never run.
      throw new LogCorruptError(
        `record ${i + 1} is of a kind this loopd does not know ("${r.t}")`,
        records.slice(0, i),
      );
    }
    applyRecord(s, r);
  }
  return s;
}

/** Every kind of record (a Record, so a kind added to LogRecord and not here does not compile). */
const KINDS: Record<LogRecord["t"], true> = {
  session: true,
  epoch: true,
  message: true,
  turn_start: true,
  note: true,
  turn_end: true,
  usage: true,
  archived: true,
  renamed: true,
  mode: true,
};

export function applyRecord(s: SessionState, r: LogRecord): void {
  s.updatedAt = r.at;
  switch (r.t) {
    case "session":
      break;
    case "epoch":
      s.epoch = { epoch: r.epoch, systemJson: r.system_json, toolsJson: r.tools_json };
      s.view = new EpochView(r.epoch, r.system_json);
      // inferproxy's prefix is of the old epoch's array.
      s.served.sent = undefined;
      // Unknown until the server reads the new epoch.
      s.contextTokens = 0;
      break;
    case "message": {
      const replay = replayTextOf(r.json);
      const m: StoredMessage = {
        epoch: r.epoch,
        json: r.json,
        at: r.at,
        ...(r.carried ? { carried: r.carried } : {}),
        ...(r.tool ? { tool: r.tool } : {}),
        ...(r.interrupted ? { interrupted: r.interrupted } : {}),
        ...(replay === undefined ? {} : { replay }),
      };
      s.history.push(m);
      if (r.epoch === s.view.epoch) s.view.add(m);
      if (r.context_tokens !== undefined) s.contextTokens = r.context_tokens;
      break;
    }
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
    default: {
      // A record kind without its case here does not compile; foldRecords refuses one from a newer loopd.
      const unknown: never = r;
      throw new LogCorruptError(`unknown record ${JSON.stringify(unknown)}`);
    }
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
export function epochMessages(s: SessionState): readonly StoredMessage[] {
  return s.view.messages;
}

/** Index of the last assistant message (the model's latest answer), -1 when there is none. */
export function lastAssistantIndex(messages: readonly StoredMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    if ((JSON.parse(messages[i]!.json) as { role?: string }).role === "assistant") return i;
  }
  return -1;
}
