import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DAY_MS } from "@boxmaker/common";
import { Checkpoints } from "../src/checkpoints.js";
import { tempDir } from "../../../test/support/tmp.js";

const change = (session: string, i: number) => ({
  session_id: session,
  call_id: `c${i}`,
  tool: "write_file",
  proposal_id: "",
  root: "/ws",
  rel: `f${i}`,
  abs: `/ws/f${i}`,
});
const blobPath = (dir: string, hash: string) => join(dir, "content", hash.slice(0, 2), hash);

/** Moves every change (and undo) of `session` in the log `days` into the past, as if made then. */
function age(dir: string, session: string, days: number): void {
  const file = join(dir, "changes.jsonl");
  const lines = readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { t: string; c?: { session_id: string; applied_unix_ms: number } });
  const ids = new Set<string>();
  for (const l of lines)
    if (l.c?.session_id === session) {
      l.c.applied_unix_ms -= days * DAY_MS;
      ids.add((l.c as unknown as { id: string }).id);
    }
  for (const l of lines)
    if (l.t === "undone" && ids.has((l as unknown as { id: string }).id))
      (l as unknown as { at: number }).at -= days * DAY_MS;
  writeFileSync(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
}

describe("checkpoints: a session's are kept whole until its last change is past the retention", () => {
  let t: ReturnType<typeof tempDir>;
  let dir: string;
  beforeEach(() => {
    t = tempDir("bxcp-");
    dir = join(t.dir, "checkpoints");
  });
  afterEach(() => t.cleanup());

  it("a session untouched for longer than keep_days loses its checkpoints and their content; the rest, and shared content, stay", () => {
    const cp = new Checkpoints(dir);
    const old = cp.record(change("old", 1), "shared before", "old after");
    cp.record(change("old", 2), null, "only old");
    const mid = cp.record(change("active", 3), null, "early in a long session");
    const fresh = cp.record(change("active", 4), "shared before", "fresh after");
    cp.record(change("recent", 5), null, "recent");
    age(dir, "old", 40);
    // A session that began 40 days ago and was changed today is active: none of it goes.
    const f = join(dir, "changes.jsonl");
    writeFileSync(
      f,
      readFileSync(f, "utf8").replace(
        `"applied_unix_ms":${mid.applied_unix_ms}`,
        `"applied_unix_ms":${mid.applied_unix_ms - 40 * DAY_MS}`,
      ),
    );

    const again = new Checkpoints(dir, { keep_days: 30, keep_sessions: 0 });
    expect(again.pruned).toBe(2);
    expect(again.list("old")).toEqual([]);
    expect(again.list("active").map((c) => c.id)).toEqual([mid.id, fresh.id]);
    expect(again.list("recent")).toHaveLength(1);
    // The old session's content is gone from disk, but not what a kept change still names.
    expect(existsSync(blobPath(dir, old.after_sha256))).toBe(false);
    expect(existsSync(blobPath(dir, old.before_sha256))).toBe(true);
    expect(again.diff(fresh)).toContain("+fresh after");
    expect(again.stat()).toMatchObject({ changes: 3, sessions: 2, pruned: 2 });

    // The log was rewritten: a restart without any retention finds exactly what was kept.
    const third = new Checkpoints(dir);
    expect(third.pruned).toBe(0);
    expect(third.stat()).toMatchObject({ changes: 3, sessions: 2 });
    expect(third.stat().bytes).toBe(again.stat().bytes);
  });

  it("an undo counts as a change: a session undone yesterday keeps its checkpoints, and the undone mark survives the rewrite", () => {
    const cp = new Checkpoints(dir);
    const a = cp.record(change("undone", 1), null, "x");
    cp.record(change("gone", 2), null, "y");
    age(dir, "undone", 40);
    age(dir, "gone", 40);
    // Marked undone now, as undo() does.
    writeFileSync(
      join(dir, "changes.jsonl"),
      `${readFileSync(join(dir, "changes.jsonl"), "utf8")}${JSON.stringify({ t: "undone", id: a.id, at: Date.now() })}\n`,
    );
    const again = new Checkpoints(dir, { keep_days: 30, keep_sessions: 0 });
    expect(again.list("gone")).toEqual([]);
    expect(again.list("undone")[0]?.undone_unix_ms).toBeGreaterThan(0);
    expect(new Checkpoints(dir).list("undone")[0]?.undone_unix_ms).toBe(again.list("undone")[0]?.undone_unix_ms);
  });

  it("keep_sessions: the most recently changed sessions stay, applied at start and every 100 changes while running", () => {
    const cp = new Checkpoints(dir, { keep_days: 0, keep_sessions: 3 });
    for (let i = 0; i < 250; i++) {
      cp.record(change(`s${i % 50}`, i), null, `content ${i}`);
      // Between two applications the store holds at most what the limit keeps plus 100 changes.
      expect(cp.stat().changes).toBeLessThanOrEqual(3 * 5 + 100);
    }
    expect(cp.pruned).toBeGreaterThan(0);
    const again = new Checkpoints(dir, { keep_days: 0, keep_sessions: 3 });
    expect(again.stat().sessions).toBe(3);
    expect(["s47", "s48", "s49"].map((s) => again.list(s).length)).toEqual([5, 5, 5]);
  });

  it("0 keeps everything, whatever its age", () => {
    const cp = new Checkpoints(dir);
    cp.record(change("ancient", 1), null, "x");
    age(dir, "ancient", 3650);
    expect(new Checkpoints(dir, { keep_days: 0, keep_sessions: 0 }).list("ancient")).toHaveLength(1);
  });
});
