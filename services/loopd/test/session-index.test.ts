import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SessionStore } from "../src/sessions/session-store.js";
import { silentLog } from "./fakes.js";
import { tempDir } from "../../../test/support/tmp.js";

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const newSession = (store: SessionStore, title: string) =>
  store.create({
    role: "main",
    title,
    parentId: "",
    slot: 0,
    systemJson: '{"role":"system","content":"sys"}',
    toolsJson: "[]",
  });

function seed(n: number): string[] {
  const store = new SessionStore(tmp.dir, silentLog);
  store.loadAll();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const s = newSession(store, `task ${i}`);
    s.append({ t: "turn_start", turn: 1, at: 1 });
    s.append({ t: "message", epoch: 0, json: `{"role":"user","content":"q${i}"}`, at: 1 });
    s.append({ t: "message", epoch: 0, json: `{"role":"assistant","content":"a${i}"}`, at: 1 });
    s.append({ t: "turn_end", turn: 1, reason: "stop", at: 1 });
    ids.push(s.id);
  }
  store.closeAll();
  return ids;
}

describe("the session index", () => {
  it("lists unchanged sessions after a clean stop without reading their logs, and reads one when it is used", () => {
    const ids = seed(3);
    expect(existsSync(join(tmp.dir, "sessions", "index.json"))).toBe(true);
    const store = new SessionStore(tmp.dir, silentLog);
    expect(store.loadAll().loaded).toBe(3);
    expect(store.list()).toEqual([]); // nothing read yet
    const listed = store.summaries();
    expect(listed.map((e) => [e.summary.title, e.summary.messages, e.summary.turn, e.live])).toEqual([
      ["task 0", 2, 1, undefined],
      ["task 1", 2, 1, undefined],
      ["task 2", 2, 1, undefined],
    ]);
    const s = store.get(ids[1]!)!;
    expect(s.state.history.map((m) => m.json)).toEqual([
      '{"role":"user","content":"q1"}',
      '{"role":"assistant","content":"a1"}',
    ]);
    expect(store.list().map((x) => x.id)).toEqual([ids[1]]);
    expect(store.count()).toBe(3);
    store.closeAll();
  });

  it("reads a log whole when it changed since the index was written (a crash mid-turn), and recovers it", () => {
    const ids = seed(2);
    const log = join(tmp.dir, "sessions", `${ids[0]}.jsonl`);
    // What a crash leaves: a turn started after the clean stop, never ended. Written through a store, then killed.
    const store1 = new SessionStore(tmp.dir, silentLog);
    store1.loadAll();
    store1.get(ids[0]!)!.append({ t: "turn_start", turn: 2, at: 2 });
    // no closeAll: the index still describes the log as it was
    const store = new SessionStore(tmp.dir, silentLog);
    const { interrupted } = store.loadAll();
    expect(interrupted).toEqual([ids[0]]);
    expect(store.list().map((s) => s.id)).toEqual([ids[0]]); // the changed one was read; the other waits
    expect(store.get(ids[0]!)!.state.lastTurnEnd).toBe("interrupted");
    store.closeAll();
    expect(readFileSync(log, "utf8")).toContain('"reason":"interrupted"');
  });

  it("is only a cache: a damaged index is ignored, and a log edited since is read again", () => {
    const ids = seed(2);
    writeFileSync(join(tmp.dir, "sessions", "index.json"), "{not json");
    const store = new SessionStore(tmp.dir, silentLog);
    expect(store.loadAll().loaded).toBe(2);
    expect(store.list()).toHaveLength(2); // every log read
    store.closeAll();
    // A log edited by hand (its size changed): read whole again at start, not listed from the index.
    appendFileSync(
      join(tmp.dir, "sessions", `${ids[1]}.jsonl`),
      '{"seq":99,"crc":"bad","rec":{"t":"note","text":"x","at":3}}\n{"seq":100',
    );
    const again = new SessionStore(tmp.dir, silentLog);
    const r = again.loadAll();
    expect(r.loaded).toBe(2);
    expect(again.list().map((s) => s.id)).toEqual([ids[1]]);
    again.closeAll();
  });
});

describe("idle sessions", () => {
  it("leave memory after the idle time, are listed from their summary, and come back whole when used", async () => {
    const [idleId, busyId, followedId] = seed(3);
    const store = new SessionStore(tmp.dir, silentLog);
    store.loadAll();
    const idle = store.get(idleId!)!;
    const seqBefore = idle.events.publish({ case: "turnStarted", value: { turn: 2 } }).seq;
    store.get(busyId!)!.running = new AbortController();
    const followed = store.get(followedId!)!;
    const follow = new AbortController();
    const following = followed.events.subscribe(0, follow.signal)[Symbol.asyncIterator]();
    void following.next(); // a client is attached
    await Promise.resolve();
    expect(store.inMemory).toBe(3);

    // Their last records are at time 1: at time 1 + 10 min they have been idle for 10 min.
    expect(store.evictIdle(1 + 599_999, 600_000)).toEqual([]);
    expect(store.evictIdle(1 + 600_000, 600_000)).toEqual([idleId]);
    expect(store.inMemory).toBe(2);
    const listed = store.summaries().find((e) => e.summary.id === idleId)!;
    expect(listed.live).toBeUndefined();
    expect(listed.summary).toMatchObject({ title: "task 0", messages: 2 });

    const back = store.get(idleId!)!;
    expect(back).not.toBe(idle);
    expect(back.state.history.map((m) => m.json)).toEqual(idle.state.history.map((m) => m.json));
    // A client that saw seq N before the session left memory sees N+1 next, not 1 again.
    expect(back.events.publish({ case: "turnStarted", value: { turn: 3 } }).seq).toBe(seqBefore! + 1n);
    back.append({ t: "turn_start", turn: 2, at: 2 }); // the log is open again and writable
    follow.abort();
    store.get(busyId!)!.running = undefined;
    store.closeAll();

    // A clean stop indexes every session, dropped ones included.
    const again = new SessionStore(tmp.dir, silentLog);
    expect(again.loadAll().loaded).toBe(3);
    expect(again.inMemory).toBe(1); // the one whose log changed since the index was written
    again.closeAll();
  });
});
