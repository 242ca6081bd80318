import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { atomicWrite, fsyncDir, messageOf, pastRetention } from "@boxmaker/common";
import { BadProposalFile } from "./errors.js";

/** `withdrawn`: the turn that staged it was cancelled while it waited; it can no longer be decided. */
export type ProposalState = "pending" | "applied" | "rejected" | "failed" | "withdrawn";

/** A command's connection to a host an ask rule names (net-proxy/host-asks.ts): approving it grants host:port to the session. */
export interface NetworkAsk {
  host: string;
  port: number;
  command: string;
}

export interface ProposalRecord {
  id: string;
  session_id: string;
  call_id: string;
  tool: string;
  arguments_json: string;
  preview: string;
  state: ProposalState;
  rule: string;
  created_unix_ms: number;
  result: string;
  /** Facts that must still hold at approval (canonical path, base file hash, command). */
  checks: Record<string, string>;
  decided_unix_ms?: number;
  reason?: string;
  /** Set for a network proposal, which is no tool call: nothing runs when it is approved. */
  network?: NetworkAsk;
}

const CHECK_MEANING: Record<string, (was: string, now: string | undefined) => string> = {
  path: (was, now) =>
    `the path now resolves to ${now ?? "nothing"} instead of ${was} (a symlink changed since staging)`,
  base_sha256: () => "the file changed on disk since the diff was made",
  cwd: (was, now) => `the working directory now resolves to ${now ?? "nothing"} instead of ${was}`,
  command: () => "the command differs from the staged one",
};

/**
 * Compares the checks recorded at staging with those of a fresh plan made
 * against the current disk. Returns why they differ, or undefined when the
 * staged action is still exactly what the person saw.
 */
export function staleReason(
  staged: Record<string, string>,
  now: Record<string, string> | undefined,
): string | undefined {
  for (const [k, was] of Object.entries(staged)) {
    const cur = now?.[k];
    if (cur !== was) return (CHECK_MEANING[k] ?? ((w, n) => `${k} changed from ${w} to ${n ?? "nothing"}`))(was, cur);
  }
  return undefined;
}

/** What is kept in memory of a decided proposal: enough to list it and to read a network grant, never its diff. */
export type ProposalSummary = Pick<
  ProposalRecord,
  "id" | "session_id" | "tool" | "state" | "created_unix_ms" | "decided_unix_ms" | "network"
>;

/** How long decided proposals stay on disk (pending ones always stay). */
export interface ProposalRetention {
  /** Decided longer ago than this is deleted; 0 keeps them for any time. */
  keep_decided_days: number;
  /** At most this many decided proposals are kept, the newest; 0 keeps any number. */
  keep_decided_max: number;
}

const DECIDED = "decided";

function summaryOf(p: ProposalRecord): ProposalSummary {
  return {
    id: p.id,
    session_id: p.session_id,
    tool: p.tool,
    state: p.state,
    created_unix_ms: p.created_unix_ms,
    ...(p.decided_unix_ms !== undefined ? { decided_unix_ms: p.decided_unix_ms } : {}),
    ...(p.network ? { network: p.network } : {}),
  };
}

function readRecord(file: string, name: string): ProposalRecord {
  const p = JSON.parse(readFileSync(file, "utf8")) as ProposalRecord;
  if (
    !p ||
    typeof p !== "object" ||
    typeof p.id !== "string" ||
    typeof p.state !== "string" ||
    typeof p.tool !== "string" ||
    `${p.id}.json` !== name
  ) {
    throw new BadProposalFile();
  }
  return p;
}

const byAge = (a: ProposalSummary, b: ProposalSummary) =>
  a.created_unix_ms - b.created_unix_ms || (a.id < b.id ? -1 : 1);

/**
 * Proposals on disk, one JSON file each, so a restart loses nothing a person
 * has not decided. Pending ones are in `dir` and in memory whole; a decided one
 * moves to `dir/decided/` and only its summary stays in memory (its diff is
 * read back when asked for), so brokerd's heap no longer grows with every
 * proposal ever made, and decided ones are kept as long as the retention says.
 */
export class ProposalStore {
  private readonly pendingById = new Map<string, ProposalRecord>();
  private readonly decidedById = new Map<string, ProposalSummary>();
  /** Bytes on disk of the decided ones, for `status`: summed as they come and go, never a directory walk. */
  private decidedFileBytes = 0;
  private readonly decidedDir: string;
  private finishedSincePrune = 0;

  /** Files that could not be loaded, moved to `quarantine/` with why: one bad file never stops brokerd. */
  readonly quarantined: Array<{ file: string; why: string }> = [];
  /** Decided proposals deleted by the retention since start. */
  pruned = 0;

  constructor(
    private readonly dir: string,
    private readonly onQuarantine: (file: string, why: string) => void = () => {},
    private readonly retention: ProposalRetention = { keep_decided_days: 0, keep_decided_max: 0 },
  ) {
    this.decidedDir = join(dir, DECIDED);
    mkdirSync(this.decidedDir, { recursive: true, mode: 0o750 });
    for (const f of readdirSync(this.decidedDir)) {
      if (!f.endsWith(".json")) continue;
      try {
        const file = join(this.decidedDir, f);
        this.decidedById.set(f.slice(0, -5), summaryOf(readRecord(file, f)));
        this.decidedFileBytes += statSync(file).size;
      } catch (err) {
        this.quarantine(this.decidedDir, f, messageOf(err) || "unreadable");
      }
    }
    for (const f of readdirSync(dir)) {
      if (!f.endsWith(".json")) continue;
      try {
        const p = readRecord(join(dir, f), f);
        // Decided already (a crash between writing decided/ and removing this one): the decision stands.
        if (this.decidedById.has(p.id)) this.removeTop(p.id);
        else if (p.state === "pending") this.pendingById.set(p.id, p);
        // A decided one in the top directory: written by a brokerd from before decided/.
        else this.moveDecided(p);
      } catch (err) {
        this.quarantine(dir, f, messageOf(err) || "unreadable");
      }
    }
    this.prune();
  }

  private quarantine(from: string, f: string, why: string): void {
    const qdir = join(this.dir, "quarantine");
    mkdirSync(qdir, { recursive: true, mode: 0o750 });
    try {
      renameSync(join(from, f), join(qdir, `${f}.${Date.now()}`));
      fsyncDir(from);
    } catch {
      /* left in place; it is skipped again next start */
    }
    this.quarantined.push({ file: f, why });
    this.onQuarantine(f, why);
  }

  stage(p: Omit<ProposalRecord, "id" | "state" | "created_unix_ms" | "result">): ProposalRecord {
    const rec: ProposalRecord = {
      ...p,
      id: `p-${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`,
      state: "pending",
      created_unix_ms: Date.now(),
      result: "",
    };
    atomicWrite(join(this.dir, `${rec.id}.json`), JSON.stringify(rec, null, 1));
    this.pendingById.set(rec.id, rec);
    return rec;
  }

  /** The whole record; a decided one is read from disk (undefined once the retention deleted it). */
  get(id: string): ProposalRecord | undefined {
    const pending = this.pendingById.get(id);
    if (pending) return pending;
    if (!this.decidedById.has(id)) return undefined;
    try {
      return readRecord(join(this.decidedDir, `${id}.json`), `${id}.json`);
    } catch {
      return undefined;
    }
  }

  /** Whole records, oldest first; decided ones (read from disk) only when asked for. */
  list(filter: { sessionId?: string; includeDecided?: boolean }): ProposalRecord[] {
    const mine = (p: ProposalSummary) => !filter.sessionId || p.session_id === filter.sessionId;
    const out = [...this.pendingById.values()].filter(mine);
    if (filter.includeDecided)
      for (const d of this.decidedById.values()) {
        if (!mine(d)) continue;
        const rec = this.get(d.id);
        if (rec) out.push(rec);
      }
    return out.sort(byAge);
  }

  /** Every proposal of a session as its summary, from memory: what the network proxy reads per connection. */
  summaries(sessionId: string): ProposalSummary[] {
    const out: ProposalSummary[] = [];
    for (const p of this.pendingById.values()) if (p.session_id === sessionId) out.push(summaryOf(p));
    for (const d of this.decidedById.values()) if (d.session_id === sessionId) out.push(d);
    return out.sort(byAge);
  }

  get pending(): number {
    return this.pendingById.size;
  }

  /** Decided proposals kept on disk. */
  get decided(): number {
    return this.decidedById.size;
  }

  /** Their bytes on disk. */
  get decidedBytes(): number {
    return Math.max(0, this.decidedFileBytes);
  }

  get keep(): ProposalRetention {
    return this.retention;
  }

  finish(p: ProposalRecord, state: Exclude<ProposalState, "pending">, result: string, reason?: string): ProposalRecord {
    const done: ProposalRecord = { ...p, state, result, decided_unix_ms: Date.now(), ...(reason ? { reason } : {}) };
    this.moveDecided(done);
    // The retention is applied as decisions accumulate, not on a timer: an idle store does not grow.
    if (++this.finishedSincePrune >= 100) this.prune();
    return done;
  }

  /** Written to decided/ first, then removed from the top: a crash between leaves it decided, never pending. */
  private moveDecided(done: ProposalRecord): void {
    const text = JSON.stringify(done, null, 1);
    atomicWrite(join(this.decidedDir, `${done.id}.json`), text);
    if (!this.decidedById.has(done.id)) this.decidedFileBytes += Buffer.byteLength(text);
    this.pendingById.delete(done.id);
    this.decidedById.set(done.id, summaryOf(done));
    this.removeTop(done.id);
  }

  private removeTop(id: string): void {
    try {
      unlinkSync(join(this.dir, `${id}.json`));
      fsyncDir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }

  /** Deletes decided proposals past the retention: older than keep_decided_days, beyond keep_decided_max. */
  prune(now = Date.now()): number {
    this.finishedSincePrune = 0;
    const { keep_decided_days: keepDays, keep_decided_max: keepMax } = this.retention;
    const gone = pastRetention(
      this.decidedById.values(),
      (d) => d.decided_unix_ms ?? d.created_unix_ms,
      { keepDays, keepMax },
      now,
    );
    for (const d of gone) {
      const file = join(this.decidedDir, `${d.id}.json`);
      this.decidedFileBytes -= statSync(file, { throwIfNoEntry: false })?.size ?? 0;
      try {
        unlinkSync(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      }
      this.decidedById.delete(d.id);
    }
    if (gone.length) fsyncDir(this.decidedDir);
    this.pruned += gone.length;
    return gone.length;
  }
}
