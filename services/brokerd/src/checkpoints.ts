import { randomBytes } from "node:crypto";
import {
  appendFileSync,
  closeSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { join } from "node:path";
import { BlobStore, sha256 } from "./blobs.js";
import type { PathGuard, ResolvedPath } from "./policy/paths.js";
import { existsAt, readFileAt } from "./tools/fs-read.js";
import { components, fdPath, openDirAt } from "./tools/fs-walk.js";
import { writeFileAt } from "./tools/fs-write.js";
import { boundedPatch } from "./tools/write-plan.js";
import { atomicWrite, messageOf, pastRetention, type Retention } from "@boxmaker/common";

/** One applied write or edit: the file's content before and after, kept in an uncapped blob store. */
export interface ChangeRecord {
  id: string;
  session_id: string;
  call_id: string;
  tool: string;
  proposal_id: string;
  root: string;
  rel: string;
  abs: string;
  /** sha256 of the content before, or "" when the file did not exist. */
  before_sha256: string;
  after_sha256: string;
  applied_unix_ms: number;
  undone_unix_ms?: number;
}

export interface UndoOutcome {
  change: ChangeRecord;
  /** restored | deleted | refused | gone */
  result: "restored" | "deleted" | "refused" | "gone";
  message: string;
}

type LogLine = { t: "change"; c: ChangeRecord } | { t: "undone"; id: string; at: number };

/** How long a session's checkpoints stay (config `checkpoints`): by its last change, and how many sessions. */
export interface CheckpointRetention {
  /** A session whose last change (or undo) is older than this loses its checkpoints; 0 keeps any age. */
  keep_days: number;
  /** The checkpoints of at most this many sessions stay, the most recently changed; 0 keeps any number. */
  keep_sessions: number;
}

/** What `status` shows of the store: what is kept, its size, and what the retention let go since start. */
export interface CheckpointStat {
  changes: number;
  sessions: number;
  bytes: number;
  pruned: number;
}

/** Changes recorded between two applications of the retention: an idle store does not grow, so no timer. */
const PRUNE_EVERY = 100;

/**
 * Checkpoints: every applied write keeps the file's previous content, so a
 * person can list a session's changes and undo them. Undo refuses a file that
 * changed since (someone edited it after the model did) unless forced.
 */
export class Checkpoints {
  private readonly changes: ChangeRecord[] = [];
  private readonly byId = new Map<string, ChangeRecord>();
  private readonly file: string;
  readonly blobs: BlobStore;
  private recordedSincePrune = 0;
  /** Changes deleted by the retention since start. */
  pruned = 0;

  constructor(
    dir: string,
    readonly retention: CheckpointRetention = { keep_days: 0, keep_sessions: 0 },
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o750 });
    this.file = join(dir, "changes.jsonl");
    // Uncapped: a checkpoint that was evicted could not be undone.
    this.blobs = new BlobStore(join(dir, "content"));
    let text = "";
    try {
      text = readFileSync(this.file, "utf8");
    } catch {
      /* none yet */
    }
    for (const l of text.split("\n")) {
      if (!l) continue;
      let r: LogLine;
      try {
        r = JSON.parse(l) as LogLine;
      } catch {
        continue; // a torn last line after a crash
      }
      if (r.t === "change") {
        this.changes.push(r.c);
        this.byId.set(r.c.id, r.c);
      } else {
        const c = this.byId.get(r.id);
        if (c) c.undone_unix_ms = r.at;
      }
    }
    this.prune();
  }

  record(
    c: Omit<ChangeRecord, "id" | "before_sha256" | "after_sha256" | "applied_unix_ms">,
    before: string | null,
    after: string,
  ): ChangeRecord {
    const rec: ChangeRecord = {
      ...c,
      id: `c-${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`,
      before_sha256: before === null ? "" : this.blobs.put(before),
      after_sha256: this.blobs.put(after),
      applied_unix_ms: Date.now(),
    };
    this.append({ t: "change", c: rec });
    this.changes.push(rec);
    this.byId.set(rec.id, rec);
    if (++this.recordedSincePrune >= PRUNE_EVERY) this.prune();
    return rec;
  }

  /**
   * Deletes the checkpoints of sessions past the retention, whole: a session
   * is judged by its last change or undo, so one still being changed is never
   * touched, and `undo` of a kept session has all its changes. The log is
   * rewritten with what stays (atomically: a crash leaves the old one), then
   * the content no kept change names is deleted.
   */
  prune(now = Date.now()): number {
    this.recordedSincePrune = 0;
    const last = new Map<string, number>();
    for (const c of this.changes) {
      const at = Math.max(c.applied_unix_ms, c.undone_unix_ms ?? 0);
      if (at > (last.get(c.session_id) ?? 0)) last.set(c.session_id, at);
    }
    const r: Retention = { keepDays: this.retention.keep_days, keepMax: this.retention.keep_sessions };
    const gone = new Set(pastRetention(last.keys(), (id) => last.get(id) ?? 0, r, now));
    if (!gone.size) return 0;
    const kept = this.changes.filter((c) => !gone.has(c.session_id));
    const dropped = this.changes.length - kept.length;
    atomicWrite(this.file, kept.map((c) => `${JSON.stringify({ t: "change", c } satisfies LogLine)}\n`).join(""));
    this.changes.splice(0, this.changes.length, ...kept);
    this.byId.clear();
    for (const c of kept) this.byId.set(c.id, c);
    const named = new Set<string>();
    for (const c of kept) {
      named.add(c.after_sha256);
      if (c.before_sha256) named.add(c.before_sha256);
    }
    this.blobs.removeUnless(named);
    this.pruned += dropped;
    return dropped;
  }

  stat(): CheckpointStat {
    const log = statSync(this.file, { throwIfNoEntry: false })?.size ?? 0;
    return {
      changes: this.changes.length,
      sessions: new Set(this.changes.map((c) => c.session_id)).size,
      bytes: log + this.blobs.stat().bytes,
      pruned: this.pruned,
    };
  }

  /** A session's changes, oldest first. */
  list(sessionId: string): ChangeRecord[] {
    return this.changes.filter((c) => c.session_id === sessionId);
  }

  diff(c: ChangeRecord): string {
    const before = c.before_sha256 ? this.blobs.get(c.before_sha256) : null;
    return boundedPatch(before, this.blobs.get(c.after_sha256), c.rel);
  }

  /**
   * Undoes the session's last `last` changes not undone yet (0: all), newest
   * first. Each file must still hold what the change wrote, unless `force`.
   */
  undo(sessionId: string, last: number, force: boolean, guard: PathGuard, maxBytes: number): UndoOutcome[] {
    const open = this.list(sessionId)
      .filter((c) => !c.undone_unix_ms)
      .reverse();
    const todo = last > 0 ? open.slice(0, last) : open;
    const out: UndoOutcome[] = [];
    for (const c of todo) out.push(this.undoOne(c, force, guard, maxBytes));
    return out;
  }

  private undoOne(c: ChangeRecord, force: boolean, guard: PathGuard, maxBytes: number): UndoOutcome {
    const refuse = (message: string): UndoOutcome => ({ change: c, result: "refused", message });
    let p: ResolvedPath;
    try {
      p = guard.resolve(c.abs, { write: true });
    } catch (err) {
      return refuse(`${c.rel}: ${messageOf(err)}`);
    }
    if (p.abs !== c.abs) return refuse(`${c.rel} now resolves to ${p.abs} (a symlink changed); not touched`);
    const exists = existsAt(p.root, p.rel);
    const now = exists ? readFileAt(p.root, p.rel, guard.secretIds, maxBytes).text : null;
    const nowSha = now === null ? "" : sha256(now);
    if (nowSha !== c.after_sha256 && !force) {
      return refuse(
        `${c.rel} changed since this change was applied (${now === null ? "it was deleted" : "its content differs"}); not touched — --force restores it anyway`,
      );
    }
    if (c.before_sha256) {
      writeFileAt(p.root, p.rel, this.blobs.get(c.before_sha256));
      guard.wroteFile(p.abs);
      this.markUndone(c);
      return { change: c, result: "restored", message: `${c.rel}: restored the content from before ${c.tool}` };
    }
    if (exists) removeFileAt(p.root, p.rel);
    this.markUndone(c);
    return {
      change: c,
      result: exists ? "deleted" : "gone",
      message: `${c.rel}: ${exists ? "deleted (it did not exist before" : "already gone (it did not exist before"} ${c.tool})`,
    };
  }

  private markUndone(c: ChangeRecord): void {
    c.undone_unix_ms = Date.now();
    this.append({ t: "undone", id: c.id, at: c.undone_unix_ms });
  }

  private append(l: LogLine): void {
    const fd = openSync(this.file, "a", 0o640);
    try {
      appendFileSync(fd, `${JSON.stringify(l)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
}

/** Removes a regular file by its canonical relative path, reached by the no-symlink walk. */
function removeFileAt(root: string, rel: string): void {
  const parts = components(rel);
  const name = parts.pop();
  if (name === undefined) return;
  const dirfd = openDirAt(root, parts, rel);
  try {
    const st = lstatSync(fdPath(dirfd, name), { throwIfNoEntry: false });
    if (st && (st.isFile() || st.isSymbolicLink())) unlinkSync(fdPath(dirfd, name));
    fsyncSync(dirfd);
  } finally {
    closeSync(dirfd);
  }
}
