import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import { atomicWrite, fsyncDir, messageOf } from "@boxmaker/common";
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

/** Proposals on disk, one JSON file each, so a restart loses nothing a person has not decided. */
export class ProposalStore {
  private readonly byId = new Map<string, ProposalRecord>();

  /** Files that could not be loaded, moved to `quarantine/` with why: one bad file never stops brokerd. */
  readonly quarantined: Array<{ file: string; why: string }> = [];

  constructor(
    private readonly dir: string,
    private readonly onQuarantine: (file: string, why: string) => void = () => {},
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o750 });
    for (const f of readdirSync(dir)) {
      if (!f.endsWith(".json")) continue;
      try {
        const p = JSON.parse(readFileSync(join(dir, f), "utf8")) as ProposalRecord;
        if (
          !p ||
          typeof p !== "object" ||
          typeof p.id !== "string" ||
          typeof p.state !== "string" ||
          typeof p.tool !== "string" ||
          `${p.id}.json` !== f
        ) {
          throw new BadProposalFile();
        }
        this.byId.set(p.id, p);
      } catch (err) {
        this.quarantine(f, messageOf(err) || "unreadable");
      }
    }
  }

  private quarantine(f: string, why: string): void {
    const qdir = join(this.dir, "quarantine");
    mkdirSync(qdir, { recursive: true, mode: 0o750 });
    try {
      renameSync(join(this.dir, f), join(qdir, `${f}.${Date.now()}`));
      fsyncDir(this.dir);
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
    this.save(rec);
    return rec;
  }

  get(id: string): ProposalRecord | undefined {
    return this.byId.get(id);
  }

  list(filter: { sessionId?: string; includeDecided?: boolean }): ProposalRecord[] {
    return [...this.byId.values()]
      .filter(
        (p) =>
          (!filter.sessionId || p.session_id === filter.sessionId) && (filter.includeDecided || p.state === "pending"),
      )
      .sort((a, b) => a.created_unix_ms - b.created_unix_ms || (a.id < b.id ? -1 : 1));
  }

  get pending(): number {
    let n = 0;
    for (const p of this.byId.values()) if (p.state === "pending") n++;
    return n;
  }

  finish(p: ProposalRecord, state: Exclude<ProposalState, "pending">, result: string, reason?: string): ProposalRecord {
    const done: ProposalRecord = { ...p, state, result, decided_unix_ms: Date.now(), ...(reason ? { reason } : {}) };
    this.save(done);
    return done;
  }

  private save(p: ProposalRecord): void {
    atomicWrite(join(this.dir, `${p.id}.json`), JSON.stringify(p, null, 1));
    this.byId.set(p.id, p);
  }
}
