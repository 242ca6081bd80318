import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ProposalStore } from "../src/staging.js";
import { tempDir } from "../../../test/support/tmp.js";

const DAY = 24 * 60 * 60 * 1000;
const staged = (store: ProposalStore, i: number, session = "s1") =>
  store.stage({
    session_id: session,
    call_id: `c${i}`,
    tool: "write_file",
    arguments_json: JSON.stringify({ path: `f${i}`, content: "x".repeat(2000) }),
    preview: `+${"line\n+".repeat(2000)}`,
    rule: "default:write",
    checks: { path: `/ws/f${i}` },
  });
const jsonIn = (dir: string) => readdirSync(dir).filter((f) => f.endsWith(".json"));

describe("proposals: decided ones leave memory, and are kept as long as the retention says", () => {
  let t: ReturnType<typeof tempDir>;
  let dir: string;
  beforeEach(() => {
    t = tempDir("bxprop-");
    dir = join(t.dir, "proposals");
  });
  afterEach(() => t.cleanup());

  it("a decided proposal moves to decided/ and is read back whole; a restart finds every one", () => {
    const store = new ProposalStore(dir);
    const all = Array.from({ length: 60 }, (_, i) => staged(store, i));
    for (const p of all.slice(0, 55)) store.finish(p, "applied", "Wrote it.");
    expect(jsonIn(dir)).toHaveLength(5);
    expect(jsonIn(join(dir, "decided"))).toHaveLength(55);
    const again = new ProposalStore(dir);
    expect(again.pending).toBe(5);
    expect(again.decided).toBe(55);
    const back = again.get(all[3]!.id)!;
    expect(back).toMatchObject({ state: "applied", result: "Wrote it.", preview: all[3]!.preview });
    // Oldest first; within one millisecond by id.
    const ids = (ps: { id: string }[]) => ps.map((p) => p.id).sort();
    expect(ids(again.list({ includeDecided: true }))).toEqual(ids(all));
    expect(ids(again.list({}))).toEqual(ids(all.slice(55)));
    // The proxy's view is summaries: state and grant, never the diff.
    const summaries = again.summaries("s1");
    expect(summaries).toHaveLength(60);
    expect(JSON.stringify(summaries)).not.toContain("line");
  });

  it("decided proposals past keep_decided_days are deleted, pending ones never, whatever their age", () => {
    const store = new ProposalStore(dir, undefined, { keep_decided_days: 30, keep_decided_max: 0 });
    const old = staged(store, 1);
    const kept = staged(store, 2);
    const waiting = staged(store, 3);
    store.finish(old, "rejected", "no");
    store.finish(kept, "applied", "ok");
    // The first decision was 40 days ago.
    const f = join(dir, "decided", `${old.id}.json`);
    writeFileSync(
      f,
      JSON.stringify({ ...JSON.parse(readFileSync(f, "utf8")), decided_unix_ms: Date.now() - 40 * DAY }),
    );
    const again = new ProposalStore(dir, undefined, { keep_decided_days: 30, keep_decided_max: 0 });
    expect(again.pruned).toBe(1);
    expect(again.get(old.id)).toBeUndefined();
    expect(again.get(kept.id)?.state).toBe("applied");
    // A year on, the pending one is still there to decide.
    expect(again.prune(Date.now() + 365 * DAY)).toBe(1);
    expect(again.get(waiting.id)?.state).toBe("pending");
    expect(jsonIn(join(dir, "decided"))).toEqual([]);
  });

  it("at most keep_decided_max decided proposals stay, the newest", () => {
    const store = new ProposalStore(dir, undefined, { keep_decided_days: 0, keep_decided_max: 50 });
    const decidedAt = new Map<string, number>();
    for (let i = 0; i < 230; i++) {
      const p = staged(store, i);
      decidedAt.set(p.id, store.finish(p, "applied", "ok").decided_unix_ms!);
    }
    // Pruned every 100 decisions, so the disk never holds more than max + 100.
    expect(store.decided).toBeLessThanOrEqual(150);
    const again = new ProposalStore(dir, undefined, { keep_decided_days: 0, keep_decided_max: 50 });
    expect(again.decided).toBe(50);
    const kept = new Set(again.list({ includeDecided: true }).map((p) => p.id));
    const oldestKept = Math.min(...[...kept].map((id) => decidedAt.get(id)!));
    const gone = [...decidedAt].filter(([id]) => !kept.has(id));
    expect(gone).toHaveLength(180);
    for (const [, at] of gone) expect(at).toBeLessThanOrEqual(oldestKept);
  });

  it("an old layout's decided files move to decided/; one cut off mid-move stays decided, never pending again", () => {
    const store = new ProposalStore(dir);
    const a = staged(store, 1);
    const b = staged(store, 2);
    // A brokerd from before decided/ left a decided proposal in the top directory.
    writeFileSync(join(dir, `${a.id}.json`), JSON.stringify({ ...a, state: "applied", result: "ok" }));
    // And a crash after writing decided/ but before removing the pending file.
    const done = store.finish(b, "rejected", "no");
    writeFileSync(join(dir, `${b.id}.json`), JSON.stringify(b));
    const again = new ProposalStore(dir);
    expect(again.get(a.id)?.state).toBe("applied");
    expect(again.get(b.id)).toMatchObject({ state: "rejected", result: done.result });
    expect(again.pending).toBe(0);
    expect(existsSync(join(dir, `${a.id}.json`)) || existsSync(join(dir, `${b.id}.json`))).toBe(false);
  });
});
