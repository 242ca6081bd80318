import type { PermissionMode } from "@boxmaker/common";
import type { EventHub } from "./event-hub.js";
import { toolMessageJson } from "./messages.js";
import type { LogRecord, SessionRoleName, ToolMeta } from "./log-record.js";
import type { AppendOptions } from "./session-log.js";
import { applyRecord, foldRecords, type SessionState } from "./session-state.js";
import { summarize, type SessionSummary } from "./session-index.js";

const INTERRUPTED_RESULT =
  "interrupted: loopd stopped before this tool call finished; its effect is unknown. Check before repeating it.";

/** Where a session's records go: its fsync'd log, or a stand-in that refuses writes to a damaged one. */
export interface RecordSink {
  readonly path: string;
  /** Records written so far: the sequence number the next one gets. */
  readonly length: number;
  /** Returns once the record is durable; throws (and keeps nothing) when it cannot be. */
  append(rec: LogRecord, opts?: AppendOptions): number;
  /** The same for records that belong together: one write, one fsync, all or none. */
  appendAll(recs: readonly LogRecord[], opts?: AppendOptions): number;
  close(): void;
}

export interface SessionHeader {
  id: string;
  role: SessionRoleName;
  title: string;
  parentId: string;
  slot: number;
  systemJson: string;
  toolsJson: string;
}

/** What a turn's requests cost, as the server counted it; kept on the turn's end record. */
export interface TurnUsage {
  cacheN: number;
  promptN: number;
  predictedN: number;
}

/**
 * One session: its log, the state folded from it, and its live events. Every
 * write goes through here, and each is persisted before memory changes, so
 * nothing acts on a record that is not on disk and a restart folds the same
 * state back. The record* methods name what happened; `state` is read-only
 * to everyone else.
 */
export class Session {
  /** Set while a turn runs, so CancelTurn can reach it. */
  running: AbortController | undefined;
  /** Event sequence number of the latest turn_started, so a client can attach from there. */
  turnStartedSeq = 0;
  private summarized: { atRecord: number; summary: SessionSummary } | undefined;

  constructor(
    readonly log: RecordSink,
    private readonly folded: SessionState,
    readonly events: EventHub,
  ) {}

  /** A new session: its first record and its first epoch, both on disk before anyone sees it. */
  static begin(log: RecordSink, h: SessionHeader, events: EventHub, at = Date.now()): Session {
    const first: LogRecord = {
      t: "session",
      id: h.id,
      role: h.role,
      title: h.title,
      parent_id: h.parentId,
      slot: h.slot,
      at,
    };
    log.append(first);
    const s = new Session(log, foldRecords([first]), events);
    s.append({ t: "epoch", epoch: 0, system_json: h.systemJson, tools_json: h.toolsJson, at });
    return s;
  }

  get id(): string {
    return this.folded.id;
  }

  get state(): Readonly<SessionState> {
    return this.folded;
  }

  /**
   * What `ls` and status show of it. Summarising reads the whole history (messages,
   * open tool calls, the system prompt), and ListSessions asks for every session in
   * memory on every call, so it is kept until a record changes the state.
   */
  summary(): SessionSummary {
    if (this.summarized?.atRecord !== this.log.length) {
      this.summarized = { atRecord: this.log.length, summary: summarize(this.folded) };
    }
    return this.summarized.summary;
  }

  /**
   * A record as given. The daemon writes through the record* methods; tests
   * and fixtures use this to write logs as older versions of loopd did.
   */
  append(rec: LogRecord): void {
    this.log.append(rec);
    applyRecord(this.folded, rec);
  }

  /** A turn opens with the user's message (its text as the model will read it): one durable write for both. */
  recordTurnStart(turn: number, userJson: string): void {
    const at = Date.now();
    const recs: LogRecord[] = [
      { t: "turn_start", turn, at },
      { t: "message", epoch: this.folded.epoch.epoch, json: userJson, at },
    ];
    this.log.appendAll(recs);
    for (const rec of recs) applyRecord(this.folded, rec);
  }

  /**
   * The model's message, exactly as the server produced it, and what the slot
   * holds after it. A message that ends the turn (no tool call to act on) is
   * made durable together with the turn's end, which follows at once.
   */
  recordAssistant(messageJson: string, contextTokens: number, endsTurn = false, interrupted = false): void {
    const rec: LogRecord = {
      t: "message",
      epoch: this.folded.epoch.epoch,
      json: messageJson,
      at: Date.now(),
      context_tokens: contextTokens,
      ...(interrupted ? { interrupted: true as const } : {}),
    };
    this.log.append(rec, { durableWithNext: endsTurn });
    applyRecord(this.folded, rec);
  }

  /** A tool call's result, with how the call was decided (kept beside the message, never sent). */
  recordToolResult(callId: string, content: string, tool: ToolMeta): void {
    this.append({
      t: "message",
      epoch: this.folded.epoch.epoch,
      json: toolMessageJson(callId, content),
      at: Date.now(),
      tool,
    });
  }

  /** Gives every tool call still without a result an explicit one, so no call is left dangling. */
  answerOpenToolCalls(result: string): void {
    for (const call of this.folded.view.openToolCalls) {
      this.recordToolResult(call.id, result, { decision: "none", rule: "not-run", is_error: true });
    }
  }

  recordTurnEnd(turn: number, reason: string, usage: TurnUsage): void {
    this.append({
      t: "turn_end",
      turn,
      reason,
      at: Date.now(),
      cache_n: usage.cacheN,
      prompt_n: usage.promptN,
      predicted_n: usage.predictedN,
      context_tokens: this.folded.contextTokens,
    });
  }

  /** Whether a turn was left open (a crash, or a write that failed at its end). */
  get interrupted(): boolean {
    return this.folded.turnOpen || this.folded.view.openToolCallCount > 0;
  }

  /** Closes a turn that could not close itself: unknown results are said to be unknown, and the turn ends "interrupted". */
  closeInterruptedTurn(): void {
    this.answerOpenToolCalls(INTERRUPTED_RESULT);
    if (this.folded.turnOpen) {
      this.append({ t: "turn_end", turn: this.folded.turn, reason: "interrupted", at: Date.now() });
    }
  }

  /**
   * A new epoch: its system message (with the folds) and the messages it
   * carries over verbatim. The old epochs stay in the log. Returns the epoch.
   */
  recordCompaction(systemJson: string, carried: readonly string[]): number {
    const epoch = this.folded.epoch.epoch + 1;
    const at = Date.now();
    this.append({
      t: "epoch",
      epoch,
      system_json: systemJson,
      tools_json: this.folded.epoch.toolsJson,
      summary_of_seq: this.log.length,
      at,
    });
    for (const json of carried) this.append({ t: "message", epoch, json, at, carried: true });
    return epoch;
  }

  /** Something the model is told at the start of its next turn (a late decision, an undo). */
  recordNote(text: string): void {
    this.append({ t: "note", text, at: Date.now() });
  }

  recordArchived(): void {
    if (!this.folded.archived) this.append({ t: "archived", at: Date.now() });
  }

  recordRenamed(title: string): void {
    if (title !== this.folded.title) this.append({ t: "renamed", title, at: Date.now() });
  }

  /** Returns the mode it replaced; setting the mode it has records nothing. */
  recordMode(mode: PermissionMode): PermissionMode {
    const previous = this.folded.mode;
    if (mode !== previous) this.append({ t: "mode", mode, at: Date.now() });
    return previous;
  }
}
