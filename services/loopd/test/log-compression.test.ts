import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import { join } from "node:path";
import { DAY_MS } from "@boxmaker/common";
import { SessionStore } from "../src/sessions/session-store.js";
import { silentLog } from "./fakes.js";
import { tempDir } from "../../../test/support/tmp.js";

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const sessions = () => join(tmp.dir, "sessions");
const retention = { compress_archived_after_days: 30, compress_idle_after_days: 90 };

/** A session whose records all carry `at` (its last use), archived when asked, then closed. */
function seed(store: SessionStore, title: string, at: number, archived = false): string {
  const s = store.create({
    role: "main",
    title,
    parentId: "",
    slot: 0,
    systemJson: '{"role":"system","content":"sys"}',
    toolsJson: "[]",
  });
  s.append({ t: "turn_start", turn: 1, at });
  for (let i = 0; i < 50; i++)
    s.append({ t: "message", epoch: 0, json: JSON.stringify({ role: "user", content: `${title} line ${i}` }), at });
  s.append({ t: "turn_end", turn: 1, reason: "stop", at });
  if (archived) s.append({ t: "archived", at });
  return s.id;
}

/** A store as loopd has it after a clean restart: every session listed from the index, none in memory. */
function restarted(): SessionStore {
  const store = new SessionStore(tmp.dir, silentLog);
  store.loadAll();
  return store;
}

describe("session logs of unused sessions are compressed, never deleted", () => {
  it("archived past 30 days and idle past 90 are compressed; recent ones, and one in memory, are not; each reads back whole", () => {
    const now = Date.now();
    const first = new SessionStore(tmp.dir, silentLog);
    first.loadAll();
    const oldArchived = seed(first, "old archived", now - 40 * DAY_MS, true);
    const newArchived = seed(first, "new archived", now - 10 * DAY_MS, true);
    const oldIdle = seed(first, "old idle", now - 100 * DAY_MS);
    const midIdle = seed(first, "mid idle", now - 40 * DAY_MS);
    const inUse = seed(first, "in use", now - 200 * DAY_MS);
    first.closeAll();
    const plainBefore = readFileSync(join(sessions(), `${oldArchived}.jsonl`));

    const store = restarted();
    // Read (a person is looking at it): in memory, so left alone however old.
    store.get(inUse);
    const pass = store.compressPast(retention, now);
    expect(pass).toMatchObject({ compressed: 2, failed: [] });
    expect(pass.bytesAfter).toBeLessThan(pass.bytesBefore / 3);
    const files = readdirSync(sessions()).sort();
    expect(files.filter((f) => f.endsWith(".gz")).sort()).toEqual(
      [`${oldArchived}.jsonl.gz`, `${oldIdle}.jsonl.gz`].sort(),
    );
    for (const id of [newArchived, midIdle, inUse]) expect(files).toContain(`${id}.jsonl`);
    // The compressed copy is the log, byte for byte.
    expect(gunzipSync(readFileSync(join(sessions(), `${oldArchived}.jsonl.gz`))).equals(plainBefore)).toBe(true);
    // Listed from the index as before, without reading anything back.
    expect(
      store
        .summaries()
        .map((e) => e.summary.title)
        .sort(),
    ).toEqual(["in use", "mid idle", "new archived", "old archived", "old idle"].sort());
    store.closeAll();

    // After a restart: still listed; used, the log is plain again and the session reads and appends as before.
    const again = restarted();
    expect(again.count()).toBe(5);
    const s = again.get(oldIdle)!;
    expect(s.state.history).toHaveLength(50);
    expect(existsSync(join(sessions(), `${oldIdle}.jsonl`))).toBe(true);
    expect(existsSync(join(sessions(), `${oldIdle}.jsonl.gz`))).toBe(false);
    s.recordRenamed("back in use");
    again.closeAll();
    expect(restarted().get(oldIdle)!.state.title).toBe("back in use");
  });

  it("rm removes a compressed log; 0 compresses nothing", () => {
    const now = Date.now();
    const first = new SessionStore(tmp.dir, silentLog);
    first.loadAll();
    const gone = seed(first, "to remove", now - 400 * DAY_MS, true);
    const kept = seed(first, "kept plain", now - 400 * DAY_MS, true);
    first.closeAll();
    const store = restarted();
    expect(store.compressPast({ compress_archived_after_days: 0, compress_idle_after_days: 0 }, now).compressed).toBe(
      0,
    );
    expect(store.compressPast(retention, now).compressed).toBe(2);
    expect(store.delete(gone)).toBe(true);
    expect(readdirSync(sessions()).filter((f) => f.startsWith(gone))).toEqual([]);
    expect(restarted().get(kept)?.state.history).toHaveLength(50);
  });

  it("a crash after compressing, before the index was written, loses nothing: the log is read back plain at start", () => {
    const now = Date.now();
    const first = new SessionStore(tmp.dir, silentLog);
    first.loadAll();
    const id = seed(first, "crashed", now - 400 * DAY_MS, true);
    first.closeAll();
    const store = restarted();
    expect(store.compressPast(retention, now).compressed).toBe(1);
    // The index as it was before the pass: as if loopd died before writing it.
    const indexFile = join(sessions(), "index.json");
    const index = JSON.parse(readFileSync(indexFile, "utf8")) as { files: Record<string, unknown> };
    delete index.files[`${id}.jsonl.gz`];
    index.files[`${id}.jsonl`] = { size: 0, mtime_ms: 0, summary: {} };
    writeFileSync(indexFile, JSON.stringify(index));
    const again = restarted();
    expect(again.get(id)?.state.history).toHaveLength(50);
    expect(readdirSync(sessions()).filter((f) => f.startsWith(id))).toEqual([`${id}.jsonl`]);
  });

  it("both the plain and the compressed log (a crash mid-compression): the plain one, which is whole, is kept", () => {
    const now = Date.now();
    const first = new SessionStore(tmp.dir, silentLog);
    first.loadAll();
    const id = seed(first, "both", now - 400 * DAY_MS, true);
    first.closeAll();
    writeFileSync(join(sessions(), `${id}.jsonl.gz`), gzipSync(Buffer.from("a torn or older copy")));
    const again = restarted();
    expect(again.get(id)?.state.history).toHaveLength(50);
    expect(readdirSync(sessions()).filter((f) => f.startsWith(id))).toEqual([`${id}.jsonl`]);
  });

  it("a compressed log that cannot be read is left as it is, and every other session loads", () => {
    const first = new SessionStore(tmp.dir, silentLog);
    first.loadAll();
    const ok = seed(first, "fine", Date.now());
    first.closeAll();
    const bad = join(sessions(), "s-damaged.jsonl.gz");
    writeFileSync(bad, "not gzip at all");
    const store = restarted();
    expect(store.get(ok)?.state.history).toHaveLength(50);
    expect(readFileSync(bad, "utf8")).toBe("not gzip at all");
  });
});
