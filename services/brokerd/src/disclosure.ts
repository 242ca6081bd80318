import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { atomicWrite } from "@boxmaker/common";

const DAY_MS = 86_400_000;

/**
 * Which extended tools each session has been shown by find_tool (or handed by
 * a blob pointer). call_tool accepts only those: the model must have seen the
 * schema it is filling in. Kept in a JSON-lines file so a brokerd restart in
 * the middle of a session does not refuse a call the model was entitled to.
 *
 * The file only grows while brokerd runs (one line per new disclosure), so it
 * is compacted at each start: one line per session, and a session with no
 * disclosure for `retentionDays` is dropped. Dropping one costs at most a
 * find_tool: its next call_tool of an old tool is refused with the advice to
 * look the tool up again, exactly as for a disclosure lost in a crash.
 */
export class Disclosure {
  private readonly bySession = new Map<string, { names: Set<string>; at: number }>();
  /** What compaction did at start-up (for the log and tests). */
  readonly compacted = { sessions: 0, dropped: 0, linesBefore: 0 };

  /** Without a path, disclosure lives in memory only (tests, benchmarks). */
  constructor(
    private readonly path?: string,
    retentionDays = 0,
    now = Date.now(),
  ) {
    if (!path) return;
    mkdirSync(dirname(path), { recursive: true });
    if (!existsSync(path)) return;
    for (const line of readFileSync(path, "utf8").split("\n")) {
      if (!line) continue;
      this.compacted.linesBefore++;
      try {
        const { session, names, at } = JSON.parse(line) as { session: string; names: string[]; at?: number };
        if (typeof session !== "string" || !Array.isArray(names)) continue;
        // A line from before disclosures were dated counts from now: it is kept a whole retention period.
        this.remember(session, names, typeof at === "number" ? at : now);
      } catch {
        // A torn last line after a crash: that disclosure is simply asked for again.
      }
    }
    if (retentionDays > 0) {
      for (const [session, d] of this.bySession) {
        if (now - d.at > retentionDays * DAY_MS) {
          this.bySession.delete(session);
          this.compacted.dropped++;
        }
      }
    }
    this.compacted.sessions = this.bySession.size;
    if (this.compacted.linesBefore !== this.bySession.size) {
      const lines = [...this.bySession].map(([session, d]) => line(session, d.names, d.at));
      atomicWrite(path, lines.join(""));
    }
  }

  disclose(session: string, names: Iterable<string>, now = Date.now()): void {
    const fresh = [...names].filter((n) => !this.has(session, n));
    if (fresh.length === 0) return;
    this.remember(session, fresh, now);
    if (this.path) appendFileSync(this.path, line(session, fresh, now));
  }

  has(session: string, name: string): boolean {
    return this.bySession.get(session)?.names.has(name) ?? false;
  }

  forget(session: string): void {
    this.bySession.delete(session);
  }

  private remember(session: string, names: Iterable<string>, at: number): void {
    let s = this.bySession.get(session);
    if (!s) {
      s = { names: new Set(), at };
      this.bySession.set(session, s);
    }
    s.at = Math.max(s.at, at);
    for (const n of names) s.names.add(n);
  }
}

const line = (session: string, names: Iterable<string>, at: number) =>
  `${JSON.stringify({ session, names: [...names], at })}\n`;

/** brokerd's disclosure file, compacted now, saying in the log what compaction dropped. */
export function disclosureFile(
  path: string,
  retentionDays: number,
  log: { info(o: object, msg: string): void },
): Disclosure {
  const d = new Disclosure(path, retentionDays);
  const c = d.compacted;
  if (c.linesBefore !== c.sessions) {
    log.info(
      { lines_before: c.linesBefore, sessions: c.sessions, dropped: c.dropped, retention_days: retentionDays },
      "disclosure file compacted",
    );
  }
  return d;
}
