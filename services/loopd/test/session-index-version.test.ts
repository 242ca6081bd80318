import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_MODE } from "@boxmaker/common";
import { INDEX_VERSION } from "../src/sessions/session-index.js";
import { SessionLog } from "../src/sessions/session-log.js";
import type { LogRecord } from "../src/sessions/log-record.js";
import { SessionStore } from "../src/sessions/session-store.js";
import { silentLog } from "./fakes.js";
import { tempDir } from "../../../test/support/tmp.js";

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const indexPath = () => join(tmp.dir, "sessions", "index.json");
type IndexFile = { version: unknown; files: Record<string, { size: number; mtime_ms: number; summary: object }> };
const readIndex = () => JSON.parse(readFileSync(indexPath(), "utf8")) as IndexFile;

/** Two sessions, one of them switched to read-only mode, and a clean stop that writes the index. */
function seed(): { plain: string; planned: string } {
  const store = new SessionStore(tmp.dir, silentLog);
  store.loadAll();
  const make = (title: string) =>
    store.create({
      role: "main",
      title,
      parentId: "",
      slot: 0,
      systemJson: '{"role":"system","content":"s"}',
      toolsJson: "[]",
    });
  const plain = make("plain");
  const planned = make("planned");
  planned.recordMode("read-only");
  for (const s of [plain, planned]) {
    s.recordTurnStart(1, '{"role":"user","content":"q"}');
    s.recordAssistant('{"role":"assistant","content":"a"}', 40, true);
    s.recordTurnEnd(1, "stop", { cacheN: 0, promptN: 40, predictedN: 1 });
  }
  store.closeAll();
  return { plain: plain.id, planned: planned.id };
}

describe("the session index's version", () => {
  it("is its summaries' shape: the field names and value types of what it stores", () => {
    seed();
    const index = readIndex();
    expect(index.version).toBe(INDEX_VERSION);
    for (const { summary } of Object.values(index.files)) {
      const shape = Object.entries(summary)
        .map(([k, v]) => [k, typeof v])
        .sort(([a], [b]) => (a! < b! ? -1 : 1));
      const derived = `summary-${createHash("sha256").update(JSON.stringify(shape)).digest("hex").slice(0, 12)}`;
      expect(derived).toBe(INDEX_VERSION);
    }
  });

  it("an older index (version 1, no mode in its summaries) is ignored: every log is read, and the next stop rebuilds it", () => {
    const { plain, planned } = seed();
    const old = readIndex();
    // What a loopd from before permission modes wrote: the same logs, summaries without the field.
    for (const e of Object.values(old.files)) delete (e.summary as { mode?: string }).mode;
    writeFileSync(indexPath(), JSON.stringify({ version: 1, files: old.files }));
    const logs = Object.keys(old.files).map((f) => statSync(join(tmp.dir, "sessions", f)).mtimeMs);

    const store = new SessionStore(tmp.dir, silentLog);
    expect(store.loadAll().loaded).toBe(2);
    // Read whole, though their size and mtime match the index: its summaries cannot be trusted.
    expect(
      store
        .list()
        .map((s) => s.id)
        .sort(),
    ).toEqual([plain, planned].sort());
    expect(store.get(planned)!.state.mode).toBe("read-only");
    expect(store.get(plain)!.state.mode).toBe(DEFAULT_MODE);
    store.closeAll();

    const rebuilt = readIndex();
    expect(rebuilt.version).toBe(INDEX_VERSION);
    expect(
      Object.values(rebuilt.files)
        .map((e) => (e.summary as { mode: string }).mode)
        .sort(),
    ).toEqual([DEFAULT_MODE, "read-only"].sort());
    // Nothing was written to the logs themselves.
    expect(Object.keys(old.files).map((f) => statSync(join(tmp.dir, "sessions", f)).mtimeMs)).toEqual(logs);

    const again = new SessionStore(tmp.dir, silentLog);
    again.loadAll();
    expect(again.list()).toEqual([]); // listed from the rebuilt index
    expect(again.summaries().find((e) => e.summary.id === planned)!.summary.mode).toBe("read-only");
    again.closeAll();
  });

  it("an entry of this version missing a field, or with one of another type, has its log read whole", () => {
    const { plain, planned } = seed();
    const index = readIndex();
    const [first, second] = Object.values(index.files);
    delete (first!.summary as { openToolCalls?: number }).openToolCalls;
    (second!.summary as { archived: unknown }).archived = "no";
    writeFileSync(indexPath(), JSON.stringify(index));
    const store = new SessionStore(tmp.dir, silentLog);
    store.loadAll();
    expect(
      store
        .list()
        .map((s) => s.id)
        .sort(),
    ).toEqual([plain, planned].sort());
    expect(store.get(plain)!.state.archived).toBe(false);
    store.closeAll();
  });
});

describe("a log with a kind of record this loopd does not know", () => {
  it("is shown read-only with the records before it, never run under a state it cannot fold", () => {
    const path = join(tmp.dir, "sessions", "s-future.jsonl");
    const { log } = SessionLog.open(path);
    log.append({ t: "session", id: "s-future", role: "main", title: "from later", parent_id: "", slot: 0, at: 1 });
    log.append({ t: "epoch", epoch: 0, system_json: '{"role":"system","content":"s"}', tools_json: "[]", at: 1 });
    log.append({ t: "message", epoch: 0, json: '{"role":"user","content":"q"}', at: 1 });
    // A newer loopd's record (say, a stricter mode): its effect on what may run is unknown here.
    log.append({ t: "sandbox_profile", profile: "strict", at: 2 } as unknown as LogRecord);
    log.close();

    const store = new SessionStore(tmp.dir, silentLog);
    const { damaged } = store.loadAll();
    expect(damaged).toEqual([
      { id: "s-future", why: expect.stringMatching(/record 4 .*does not know \("sandbox_profile"\)/) },
    ]);
    const s = store.get("s-future")!;
    expect(s.state.title).toMatch(/^\[damaged, read-only: .*\] from later$/);
    expect(s.state.history.map((m) => m.json)).toEqual(['{"role":"user","content":"q"}']);
    expect(() => s.recordNote("x")).toThrow(/read-only/);
    store.closeAll();
  });
});
