import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { runTurn } from "../src/loop/agent-loop.js";
import type { BudgetLimits } from "../src/loop/budgets.js";
import { buildMessagesJson, unansweredToolCalls } from "../src/sessions/epoch-view.js";
import { SessionLog } from "../src/sessions/session-log.js";
import { foldRecords, quarantinedState } from "../src/sessions/session-state.js";
import { SessionStore } from "../src/sessions/session-store.js";
import { fakeBroker, fakeInfer, silentLog } from "./fakes.js";
import { tempDir } from "../../../test/support/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let store: SessionStore;
const unlimited: BudgetLimits = { max_iterations: 0, max_total_tokens: 0, max_wall_ms: 0, max_thinking_tokens: 0 };
const fresh = { role: "main" as const, title: "t", parentId: "", slot: 0, systemJson: "{}", toolsJson: "[]" };

beforeEach(() => {
  tmp = tempDir();
  store = new SessionStore(tmp.dir, silentLog);
});
afterEach(() => {
  store.closeAll();
  tmp.cleanup();
});

/** A store reopened on the same directory, as after a restart. */
function restart(): SessionStore {
  store.closeAll();
  store = new SessionStore(tmp.dir, silentLog);
  restored = store.loadAll();
  return store;
}
let restored: ReturnType<SessionStore["loadAll"]>;

describe("a log written by an older loopd", () => {
  // loopd 0.1's shapes: messages without tool metadata or context counts, a `usage` record,
  // a turn_end without counts, an epoch from compaction with a carried message.
  const FIXTURE = join(import.meta.dirname, "fixtures", "log-loopd-0.1.jsonl");

  it("loads, folds to the state it described, and takes the next turn after its last record", async () => {
    mkdirSync(join(tmp.dir, "sessions"), { recursive: true });
    copyFileSync(FIXTURE, join(tmp.dir, "sessions", "s-old1.jsonl"));
    restart();
    expect(restored).toMatchObject({ loaded: 1, interrupted: [], damaged: [] });
    const s = store.get("s-old1")!;
    expect(s.state).toMatchObject({
      title: "written by loopd 0.1",
      turn: 2,
      turnOpen: false,
      lastTurnEnd: "cancelled",
      epoch: { epoch: 1 },
      // The new epoch has not been read by the server yet.
      contextTokens: 0,
    });
    expect(s.state.history).toHaveLength(6);
    expect(s.state.history.every((m) => m.tool === undefined)).toBe(true);
    expect(unansweredToolCalls(s.state)).toEqual([]);

    const infer = fakeInfer([{ content: "still here", promptN: 50, cacheN: 0, predictedN: 3 }]);
    const d = { infer, broker: fakeBroker(), log: silentLog, maxTokens: 100 };
    const out = await runTurn(s, "go on", unlimited, d, new AbortController().signal);
    expect(out.finishReason).toBe("stop");
    expect(infer.requests[0]!.messagesJson).toMatch(
      /^\[\{"role":"system","content":"sys\\n\\n## Summary of the earlier conversation\\n\[Boxmaker fold 1:.*\},\{"role":"assistant","content":"There is a.txt."\},\{"role":"user","content":"and now\?"\},\{"role":"user","content":"go on"\}\]$/,
    );
    // The new records follow the old ones in the same file, and the whole log folds to the same state.
    const { records } = SessionLog.read(s.log.path);
    expect(records.slice(14).map((x) => x.t)).toEqual(["turn_start", "message", "message", "turn_end"]);
    expect(buildMessagesJson(foldRecords(records))).toBe(buildMessagesJson(s.state));
  });
});

describe("state derived from records", () => {
  it("what the slot holds survives a restart as soon as the model's answer is on disk", () => {
    const s = store.create(fresh);
    s.recordTurnStart(1, '{"role":"user","content":"q"}');
    s.recordAssistant('{"role":"assistant","content":"a"}', 321);
    expect(s.state.contextTokens).toBe(321);
    // No turn_end yet: a crash here still knows the count.
    expect(restart().get(s.id)!.state.contextTokens).toBe(321);
  });

  it("a new epoch starts with nothing counted; its carried messages are marked", () => {
    const s = store.create(fresh);
    s.recordAssistant('{"role":"assistant","content":"a"}', 500);
    const epoch = s.recordCompaction('{"role":"system","content":"folded"}', ['{"role":"user","content":"kept"}']);
    expect(epoch).toBe(1);
    expect(s.state.contextTokens).toBe(0);
    const again = restart().get(s.id)!.state;
    expect(again.contextTokens).toBe(0);
    expect(again.epoch).toMatchObject({ epoch: 1, systemJson: '{"role":"system","content":"folded"}' });
    expect(again.history.at(-1)).toMatchObject({ epoch: 1, carried: true });
  });

  it("notes wait for the next turn; renaming and archiving write only a change", () => {
    const s = store.create(fresh);
    s.recordNote("late decision");
    expect(s.state.pendingNotes).toEqual(["late decision"]);
    const before = s.log.length;
    s.recordRenamed("t");
    s.recordArchived();
    s.recordArchived();
    expect(s.log.length).toBe(before + 1);
    s.recordTurnStart(1, '{"role":"user","content":"q"}');
    expect(s.state.pendingNotes).toEqual([]);
    expect(restart().get(s.id)!.state.archived).toBe(true);
  });

  it("a turn left open is closed with explicit results for its calls", () => {
    const s = store.create(fresh);
    s.recordTurnStart(1, '{"role":"user","content":"q"}');
    s.recordAssistant(
      '{"role":"assistant","content":null,"tool_calls":[{"id":"k","type":"function","function":{"name":"x","arguments":"{}"}}]}',
      10,
    );
    expect(s.interrupted).toBe(true);
    s.closeInterruptedTurn();
    expect(s.interrupted).toBe(false);
    expect(s.state.lastTurnEnd).toBe("interrupted");
    expect(s.state.history.at(-1)!.tool).toEqual({ decision: "none", rule: "not-run", is_error: true });
  });

  it("a damaged log shows what could be read, titled with what is wrong", () => {
    const prefix = [
      { t: "session" as const, id: "s-x", role: "main" as const, title: "mine", parent_id: "", slot: 0, at: 5 },
      { t: "turn_start" as const, turn: 1, at: 6 },
    ];
    const fallback = () => ({ id: "unused", at: 0 });
    expect(quarantinedState(prefix, "bad crc", fallback)).toMatchObject({
      id: "s-x",
      title: "[damaged, read-only: bad crc] mine",
      turnOpen: false,
    });
    expect(quarantinedState([], "no session record", () => ({ id: "s-y", at: 7 }))).toMatchObject({
      id: "s-y",
      title: "[damaged, read-only: no session record]",
      createdAt: 7,
    });
  });
});

describe("a live session's summary", () => {
  it("follows every record and is the same answer while nothing is recorded", () => {
    const s = store.create(fresh);
    const first = s.summary();
    expect(first).toMatchObject({ turn: 0, messages: 0, turnOpen: false, openToolCalls: 0 });
    expect(s.summary()).toBe(first);

    s.recordTurnStart(1, '{"role":"user","content":"q"}');
    expect(s.summary()).toMatchObject({ turn: 1, messages: 1, turnOpen: true });
    s.recordAssistant(
      '{"role":"assistant","content":null,"tool_calls":[{"id":"k","type":"function","function":{"name":"x","arguments":"{}"}}]}',
      10,
    );
    expect(s.summary()).toMatchObject({ messages: 2, openToolCalls: 1, contextTokens: 10 });
    s.recordToolResult("k", "done", { decision: "allowed", rule: "r", is_error: false });
    s.recordTurnEnd(1, "stop", { cacheN: 0, promptN: 1, predictedN: 1 });
    const ended = s.summary();
    expect(ended).toMatchObject({ messages: 3, openToolCalls: 0, turnOpen: false, lastTurnEnd: "stop" });
    expect(store.mostRecent(10, () => true).shown[0]!.summary).toBe(ended);
  });
});
