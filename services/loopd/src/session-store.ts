import { mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { messageOf, type Logger } from "@boxmaker/common";
import { LogCorruptError, SessionReadOnlyError } from "./errors.js";
import { SessionLog, type LogRecord, type SessionRoleName } from "./session-log.js";
import { applyRecord, foldRecords, type SessionState } from "./session-state.js";
import { unansweredToolCalls } from "./epoch-view.js";
import { EventHub } from "./event-hub.js";
import { toolMessageJson } from "./messages.js";
import { SessionIndex, summarize, type SessionSummary } from "./session-index.js";

export const INTERRUPTED_RESULT =
  "interrupted: loopd stopped before this tool call finished; its effect is unknown. Check before repeating it.";

/** One session: its log on disk, the state folded from it, and its live events. */
export class Session {
  /** Set while a turn runs, so CancelTurn can reach it. */
  running: AbortController | undefined;
  /** Event sequence number of the latest turn_started, so a client can attach from there. */
  turnStartedSeq = 0;

  constructor(
    readonly log: SessionLog,
    readonly state: SessionState,
    readonly events: EventHub,
  ) {}

  get id(): string {
    return this.state.id;
  }

  /** Persists first, then updates memory: nothing acts on a record that is not on disk. */
  append(rec: LogRecord): void {
    this.log.append(rec);
    applyRecord(this.state, rec);
  }
}

function newSessionId(): string {
  // Time first so `ls` of the state directory lists sessions in creation order.
  return `s-${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;
}

export interface NewSession {
  role: SessionRoleName;
  title: string;
  parentId: string;
  slot: number;
  systemJson: string;
  toolsJson: string;
}

/** All sessions, one log file each under `<state_dir>/sessions/`. */
export class SessionStore {
  /** Sessions in memory: created, used or recovered since start. */
  private readonly sessions = new Map<string, Session>();
  /** Sessions known only by their index summary until something needs them (`get`). */
  private readonly dormant = new Map<string, { file: string; path: string; summary: SessionSummary }>();
  /** Damaged logs loaded read-only: never written to the index, so each start checks them again. */
  private readonly readOnly = new Set<string>();
  private readonly dir: string;
  private readonly index: SessionIndex;

  constructor(
    stateDir: string,
    private readonly log: Logger,
  ) {
    this.dir = join(stateDir, "sessions");
    mkdirSync(this.dir, { recursive: true });
    this.index = new SessionIndex(join(this.dir, "index.json"));
  }

  /**
   * Loads every session. A turn that a crash interrupted is closed here: each
   * unanswered tool call gets an explicit result, then the turn is marked
   * interrupted, so the session accepts the next message.
   */
  loadAll(): { loaded: number; interrupted: string[]; damaged: Array<{ id: string; why: string }> } {
    const interrupted: string[] = [];
    const damaged: Array<{ id: string; why: string }> = [];
    const ignored = this.index.load();
    if (ignored) this.log.warn({ why: ignored }, "session index ignored; reading every log");
    for (const f of readdirSync(this.dir)
      .filter((n) => n.endsWith(".jsonl"))
      .sort()) {
      const path = join(this.dir, f);
      // A log unchanged since the last clean stop is listed from the index and read when first needed.
      const st = statSync(path, { throwIfNoEntry: false });
      const known = st && this.index.unchanged(f, st.size, st.mtimeMs);
      if (known) {
        this.dormant.set(known.id, { file: f, path, summary: known });
        continue;
      }
      this.loadFile(path, f, interrupted, damaged);
    }
    return { loaded: this.sessions.size + this.dormant.size, interrupted, damaged };
  }

  /** Reads one log whole: a session in memory, recovered if a crash interrupted it, or read-only if damaged. */
  private loadFile(
    path: string,
    f: string,
    interrupted: string[] = [],
    damaged: Array<{ id: string; why: string }> = [],
  ): Session | undefined {
    let opened: ReturnType<typeof SessionLog.open> | undefined;
    let state: SessionState;
    try {
      opened = SessionLog.open(path);
      if (opened.records.length === 0) {
        opened.log.close();
        return undefined;
      }
      state = foldRecords(opened.records);
    } catch (err) {
      // One bad log never stops loopd: that session is shown read-only, flagged, and the rest load.
      opened?.log.close();
      const why = messageOf(err).replace(`${path}: `, "");
      const s = this.quarantined(path, f, err instanceof LogCorruptError ? err.validPrefix : [], why);
      damaged.push({ id: s.id, why });
      this.log.error({ path, why }, "session log is damaged; the session is read-only");
      return s;
    }
    const { log, droppedTailBytes } = opened;
    if (droppedTailBytes) this.log.warn({ path, droppedTailBytes }, "dropped a torn final record");
    const s = new Session(log, state, new EventHub(state.id));
    this.sessions.set(state.id, s);
    if (state.turnOpen || unansweredToolCalls(state).length) {
      closeInterruptedTurn(s);
      interrupted.push(state.id);
    }
    return s;
  }

  /** A session whose log cannot be trusted: what could be read, a title saying what is wrong, and no writes. */
  private quarantined(path: string, file: string, prefix: LogRecord[], why: string): Session {
    let state: SessionState;
    try {
      state = foldRecords(prefix);
    } catch {
      const at = statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
      const id = file.replace(/\.jsonl$/, "");
      state = foldRecords([{ t: "session", id, role: "main", title: "", parent_id: "", slot: 0, at: Math.round(at) }]);
    }
    state.title = `[damaged, read-only: ${why}]${state.title ? ` ${state.title}` : ""}`;
    state.turnOpen = false;
    const readOnly = {
      path,
      close() {},
      append(): never {
        throw new SessionReadOnlyError(
          `session ${state.id} is read-only: its log ${path} is damaged (${why}); repair or delete it`,
        );
      },
    } as unknown as SessionLog;
    const s = new Session(readOnly, state, new EventHub(state.id));
    this.sessions.set(state.id, s);
    this.readOnly.add(state.id);
    return s;
  }

  create(n: NewSession): Session {
    const id = newSessionId();
    const { log } = SessionLog.open(join(this.dir, `${id}.jsonl`));
    const at = Date.now();
    const first: LogRecord = {
      t: "session",
      id,
      role: n.role,
      title: n.title,
      parent_id: n.parentId,
      slot: n.slot,
      at,
    };
    log.append(first);
    const s = new Session(log, foldRecords([first]), new EventHub(id));
    s.append({ t: "epoch", epoch: 0, system_json: n.systemJson, tools_json: n.toolsJson, at });
    this.sessions.set(id, s);
    return s;
  }

  /** A session, read from its log now if it was known only by its summary. */
  get(id: string): Session | undefined {
    const s = this.sessions.get(id);
    if (s) return s;
    const d = this.dormant.get(id);
    if (!d) return undefined;
    this.dormant.delete(id);
    return this.loadFile(d.path, d.file);
  }

  /** The sessions in memory (the only ones that can be running). */
  list(): Session[] {
    return [...this.sessions.values()].sort((a, b) => a.state.createdAt - b.state.createdAt);
  }

  /** Every session for listing, oldest first: in-memory ones with their live state, the rest by summary. */
  summaries(): Array<{ summary: SessionSummary; live?: Session }> {
    const all: Array<{ summary: SessionSummary; live?: Session }> = [...this.dormant.values()].map((d) => ({
      summary: d.summary,
    }));
    for (const s of this.sessions.values()) all.push({ summary: summarize(s.state), live: s });
    return all.sort((a, b) => a.summary.createdAt - b.summary.createdAt);
  }

  count(): number {
    return this.sessions.size + this.dormant.size;
  }

  /** Removes a session and its log file for good. */
  delete(id: string): boolean {
    const s = this.get(id);
    if (!s) return false;
    s.log.close();
    rmSync(join(this.dir, `${id}.jsonl`), { force: true });
    this.sessions.delete(id);
    return true;
  }

  /** Closes every log and writes the index, so the next start lists unchanged sessions without reading them. */
  closeAll(): void {
    for (const s of this.sessions.values()) s.log.close();
    const logs = [...this.dormant.values()];
    for (const s of this.sessions.values()) {
      if (!this.readOnly.has(s.id))
        logs.push({ file: `${s.id}.jsonl`, path: join(this.dir, `${s.id}.jsonl`), summary: summarize(s.state) });
    }
    try {
      this.index.save(logs);
    } catch (err) {
      // Only start-up speed depends on it: the next start reads every log instead.
      this.log.warn({ err: messageOf(err) }, "could not write the session index");
    }
  }
}

/** Gives every tool call still without a result an explicit one, so no call is left dangling. */
export function answerOpenToolCalls(s: Session, result: string): void {
  for (const call of unansweredToolCalls(s.state)) {
    s.append({
      t: "message",
      epoch: s.state.epoch.epoch,
      json: toolMessageJson(call.id, result),
      at: Date.now(),
      tool: { decision: "none", rule: "not-run", is_error: true },
    });
  }
}

export function closeInterruptedTurn(s: Session): void {
  answerOpenToolCalls(s, INTERRUPTED_RESULT);
  if (s.state.turnOpen) s.append({ t: "turn_end", turn: s.state.turn, reason: "interrupted", at: Date.now() });
}
