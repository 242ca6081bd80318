import { randomBytes } from "node:crypto";
import {
  appendFileSync,
  closeSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  unlinkSync,
} from "node:fs";
import { join } from "node:path";
import { BlobStore, sha256 } from "./blobs.js";
import type { PathGuard, ResolvedPath } from "./policy/paths.js";
import { existsAt, readFileAt } from "./tools/fs-read.js";
import { components, fdPath, openDirAt } from "./tools/fs-walk.js";
import { writeFileAt } from "./tools/fs-write.js";
import { boundedPatch } from "./tools/write-plan.js";
import { messageOf } from "@boxmaker/common";

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

  constructor(dir: string) {
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
    return rec;
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
    const now = exists ? readFileAt(p.root, p.rel, maxBytes).text : null;
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
