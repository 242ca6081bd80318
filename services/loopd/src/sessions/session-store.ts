import { readdirSync, rmSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { randomBytes } from "node:crypto";
import { makeConfiguredDir, messageOf, type Logger } from "@boxmaker/common";
import { COMPRESSED, compressDue, restoreLog, type CompressPass, type LogRetention } from "./log-compression.js";
import { SessionLog } from "./session-log.js";
import { EventHub } from "./event-hub.js";
import { Session, type SessionHeader } from "./session.js";
import { openSessionLog } from "./session-open.js";
import { SessionIndex, type SessionSummary } from "./session-index.js";
import { TopK } from "./top-k.js";

/** A session as listed: its summary, and the session itself when it is in memory. */
export interface Listed {
  summary: SessionSummary;
  live?: Session;
}

/** How `ls` orders sessions: most recently active first; of two as recent, the older session first. */
export const byRecency = (a: Listed, b: Listed): number =>
  b.summary.updatedAt - a.summary.updatedAt || a.summary.createdAt - b.summary.createdAt;

function newSessionId(): string {
  // Time first so `ls` of the state directory lists sessions in creation order.
  return `s-${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;
}

export type NewSession = Omit<SessionHeader, "id">;

/** All sessions, one log file each under `<state_dir>/sessions/`. */
export class SessionStore {
  /** Sessions in memory: created, used or recovered since start. */
  private readonly sessions = new Map<string, Session>();
  /** Sessions known only by their index summary until something needs them (`get`). */
  private readonly dormant = new Map<
    string,
    { file: string; path: string; summary: SessionSummary; lastSeq?: number }
  >();
  /** Damaged logs loaded read-only: never written to the index, so each start checks them again. */
  private readonly readOnly = new Set<string>();
  private readonly dir: string;
  private readonly index: SessionIndex;

  constructor(
    stateDir: string,
    private readonly log: Logger,
  ) {
    this.dir = join(stateDir, "sessions");
    // The first thing loopd writes: a state_dir it cannot use is the config's to fix (one line, exit 2).
    makeConfiguredDir(this.dir, "state_dir", 0o777);
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
    const names = readdirSync(this.dir);
    const plain = new Set(names.filter((n) => n.endsWith(".jsonl")));
    for (const f of names.filter((n) => n.endsWith(`.jsonl${COMPRESSED}`)).sort()) {
      const path = join(this.dir, f);
      // Both: a crash between writing this and removing the plain log, which is whole and the truth.
      if (plain.has(f.slice(0, -COMPRESSED.length))) {
        rmSync(path, { force: true });
        continue;
      }
      const st = statSync(path, { throwIfNoEntry: false });
      const known = st && this.index.unchanged(f, st.size, st.mtimeMs);
      if (known) this.dormant.set(known.id, { file: f, path, summary: known });
      // Compressed since the index was last written (loopd did not stop cleanly): read it back plain.
      else
        try {
          plain.add(basename(restoreLog(path)));
        } catch (err) {
          // One unreadable file never stops loopd: it is left exactly as it is, for a person to look at.
          this.log.error({ path, why: messageOf(err) }, "compressed session log cannot be read; left as it is");
        }
    }
    for (const f of [...plain].sort()) {
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
    lastSeq = 0,
  ): Session | undefined {
    const opened = openSessionLog(path, f, lastSeq);
    if (opened.kind === "empty") return undefined;
    const s = opened.session;
    this.sessions.set(s.id, s);
    if (opened.kind === "damaged") {
      this.readOnly.add(s.id);
      damaged.push({ id: s.id, why: opened.why });
      this.log.error({ path, why: opened.why }, "session log is damaged; the session is read-only");
      return s;
    }
    if (opened.droppedTailBytes)
      this.log.warn({ path, droppedTailBytes: opened.droppedTailBytes }, "dropped a torn final record");
    if (s.interrupted) {
      s.closeInterruptedTurn();
      interrupted.push(s.id);
    }
    return s;
  }

  create(n: NewSession): Session {
    const id = newSessionId();
    const { log } = SessionLog.open(join(this.dir, `${id}.jsonl`));
    const s = Session.begin(log, { id, ...n }, new EventHub(id));
    this.sessions.set(id, s);
    return s;
  }

  /**
   * The full ids a person's `id` may mean: itself when a session has it, else
   * every session whose id starts with it (ids are long; a unique prefix is
   * enough, as for proposals). Empty when none does.
   */
  idsFor(id: string): string[] {
    if (this.sessions.has(id) || this.dormant.has(id)) return [id];
    if (!id) return [];
    const out: string[] = [];
    for (const k of this.sessions.keys()) if (k.startsWith(id)) out.push(k);
    for (const k of this.dormant.keys()) if (k.startsWith(id)) out.push(k);
    return out;
  }

  /** A session, read from its log now if it was known only by its summary. */
  get(id: string): Session | undefined {
    const s = this.sessions.get(id);
    if (s) return s;
    const d = this.dormant.get(id);
    if (!d) return undefined;
    // A compressed log is brought back plain the moment its session is needed: it reads and appends as before.
    // Before it leaves the listing: a restore that fails (a full disk) leaves the session listed, and compressed.
    const path = d.path.endsWith(COMPRESSED) ? restoreLog(d.path) : d.path;
    this.dormant.delete(id);
    return this.loadFile(path, basename(path), [], [], d.lastSeq);
  }

  /**
   * Compresses the logs of sessions past `r`: archived ones untouched for
   * compress_archived_after_days, any untouched for compress_idle_after_days.
   * Only sessions out of memory (dormant) are touched: one running, open,
   * followed or used within session_idle_ms never is. A log is never deleted
   * here; the index is written after, so the next start lists the compressed
   * logs without reading them.
   */
  compressPast(r: LogRetention, now: number): CompressPass {
    const pass = compressDue([...this.dormant.values()], r, now);
    if (pass.compressed) this.saveIndex();
    return pass;
  }

  /**
   * Drops from memory the sessions nobody has used for `idleMs` — no turn
   * running or open, nobody following them — so a daemon that runs for months
   * holds only what is in use. Each is closed and listed from its summary
   * until `get` reads its log again; its event numbering carries on from
   * where it stopped. Returns the ids dropped.
   */
  evictIdle(now: number, idleMs: number): string[] {
    const dropped: string[] = [];
    for (const s of this.sessions.values()) {
      if (this.readOnly.has(s.id) || s.running || s.state.turnOpen || s.events.listening) continue;
      if (now - s.state.updatedAt < idleMs) continue;
      s.log.close();
      this.sessions.delete(s.id);
      this.dormant.set(s.id, { ...this.listing(s), lastSeq: s.events.lastSeq });
      dropped.push(s.id);
    }
    return dropped;
  }

  /** A session's log file and its summary now: how it is listed when not in memory. */
  private listing(s: Session): { file: string; path: string; summary: SessionSummary } {
    const file = `${s.id}.jsonl`;
    return { file, path: join(this.dir, file), summary: s.summary() };
  }

  /** How many sessions are in memory (the rest are listed from summaries). */
  get inMemory(): number {
    return this.sessions.size;
  }

  /** The sessions in memory (the only ones that can be running). */
  list(): Session[] {
    return [...this.sessions.values()].sort((a, b) => a.state.createdAt - b.state.createdAt);
  }

  /** Every session for listing, oldest first: in-memory ones with their live state, the rest by summary. */
  summaries(): Listed[] {
    const all: Listed[] = [];
    this.eachListed((e) => all.push(e));
    return all.sort((a, b) => a.summary.createdAt - b.summary.createdAt);
  }

  /**
   * The `limit` most recently active sessions that `include` keeps (in `byRecency` order)
   * and how many it keeps in all, without copying and sorting every session.
   */
  mostRecent(limit: number, include: (s: SessionSummary) => boolean): { shown: Listed[]; total: number } {
    const pick = new TopK<Listed>(limit, byRecency);
    this.eachListed((e) => {
      if (include(e.summary)) pick.offer(e);
    });
    return { shown: pick.top, total: pick.total };
  }

  /**
   * Every session as listed, dormant ones first. A dormant entry is handed over as it is
   * (a Listed without `live`): no object per session per listing.
   */
  private eachListed(fn: (e: Listed) => void): void {
    for (const d of this.dormant.values()) fn(d);
    for (const s of this.sessions.values()) fn({ summary: s.summary(), live: s });
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
    rmSync(join(this.dir, `${id}.jsonl${COMPRESSED}`), { force: true });
    this.sessions.delete(id);
    return true;
  }

  /** Closes every log and writes the index, so the next start lists unchanged sessions without reading them. */
  closeAll(): void {
    for (const s of this.sessions.values()) s.log.close();
    this.saveIndex();
  }

  private saveIndex(): void {
    const logs = [...this.dormant.values()];
    for (const s of this.sessions.values()) {
      if (!this.readOnly.has(s.id)) logs.push(this.listing(s));
    }
    try {
      this.index.save(logs);
    } catch (err) {
      // Only start-up speed depends on it: the next start reads every log instead.
      this.log.warn({ err: messageOf(err) }, "could not write the session index");
    }
  }
}
