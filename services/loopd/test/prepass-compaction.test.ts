import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Compactor } from "../src/compaction/compaction.js";
import { boundFolds, foldBlock, foldsOf, FOLD_HEADING } from "../src/compaction/folds.js";
import { needsCompaction } from "../src/compaction/compaction-policy.js";
import { SessionStore } from "../src/sessions/session-store.js";
import type { Session } from "../src/sessions/session.js";
import { epochMessages } from "../src/sessions/session-state.js";
import { bytesPerToken, recordPromptCount, tokensOf } from "../src/sessions/token-counts.js";
import { systemMessageJson, userMessageJson } from "../src/sessions/messages.js";
import { fakeInfer, silentLog } from "./fakes.js";
import { tempDir } from "../../../test/support/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let store: SessionStore;
let s: Session;

beforeEach(() => {
  tmp = tempDir();
  store = new SessionStore(tmp.dir, silentLog);
  s = store.create({
    role: "main",
    title: "t",
    parentId: "",
    slot: 0,
    systemJson: systemMessageJson("sys"),
    toolsJson: "[]",
  });
});
afterEach(() => {
  store.closeAll();
  tmp.cleanup();
});

const H = (c: string) => c.repeat(64);
function exchange(i: number, extra = "") {
  s.append({ t: "message", epoch: s.state.epoch.epoch, json: userMessageJson(`question ${i}${extra}`), at: 1 });
  s.append({
    t: "message",
    epoch: s.state.epoch.epoch,
    json: JSON.stringify({ role: "assistant", content: `answer ${i}` }),
    at: 1,
  });
}
const status = async () => ({ slots: [{ id: 0, nCtx: 8192 }], selfTest: undefined }) as never;

describe("token counts from the server", () => {
  it("uses the measured bytes per token (with a margin) instead of 3", () => {
    expect(bytesPerToken(s.state)).toBe(3);
    recordPromptCount(s.state, 44_000, 10_000);
    expect(bytesPerToken(s.state)).toBeCloseTo(4.4 / 1.1);
    expect(tokensOf(s.state, "x".repeat(4000))).toBe(1000 + 8);
  });

  it("needsCompaction counts what the slot holds plus what was appended", () => {
    const m = [{ epoch: 0, json: "x".repeat(3000), at: 0 }];
    expect(needsCompaction(1000, m, 100, 4096, 0.8)).toBe(false);
    expect(needsCompaction(3000, m, 100, 4096, 0.8)).toBe(true);
  });
});

describe("folds", () => {
  it("never compacts a session whose epoch holds only the new message", async () => {
    s.append({ t: "message", epoch: 0, json: userMessageJson("x".repeat(200_000)), at: 1 });
    const infer = { ...fakeInfer([]), status };
    const c = new Compactor(infer, silentLog, { threshold: 0.8, keep_recent_messages: 4 }, "sys", 512);
    expect(await c.maybeCompact(s, new AbortController().signal)).toBeUndefined();
    expect(infer.requests).toHaveLength(0);
  });

  it("folds old turns once; the second fold carries the first verbatim and re-lists blob pointers", async () => {
    const infer = { ...fakeInfer([{ content: "summary one" }, { content: "summary two" }]), status };
    const c = new Compactor(infer, silentLog, { threshold: 0.8, keep_recent_messages: 2 }, "sys", 512);
    const ac = new AbortController();
    exchange(1, ` see blob:sha256:${H("a")}`);
    exchange(2);
    exchange(3);
    const r1 = await c.compact(s, ac.signal);
    expect(r1).toMatchObject({ epoch: 1, foldedMessages: 4, keptMessages: 2, carriedFoldBytes: 0 });
    const f1 = foldsOf(s.state.epoch.systemJson);
    expect(f1).toBe(
      `[Boxmaker fold 1: 4 messages of epoch 0]\nsummary one\nBlobs these turns referenced (read_blob / grep_blob): blob:sha256:${H("a")}\n[end of fold 1]`,
    );
    expect(epochMessages(s.state).map((m) => m.carried)).toEqual([true, true]);

    exchange(4);
    exchange(5);
    const r2 = await c.compact(s, ac.signal);
    expect(r2!.carriedFoldBytes).toBe(Buffer.byteLength(f1));
    const f2 = foldsOf(s.state.epoch.systemJson);
    expect(f2.startsWith(`${f1}\n\n[Boxmaker fold 2: 4 messages of epoch 1]\nsummary two\n[end of fold 2]`)).toBe(true);
    // The second summary request asked only for what came after the first fold.
    expect(infer.requests[1]!.messagesJson).toContain("only the conversation after it");
    expect((JSON.parse(s.state.epoch.systemJson) as { content: string }).content).toContain(FOLD_HEADING);
  });

  it("bounds carried folds: the oldest keep their header and blob list", () => {
    const f1 = foldBlock(1, 0, 4, "x".repeat(2000), [`blob:sha256:${H("b")}`]);
    const f2 = foldBlock(2, 1, 4, "short", []);
    const out = boundFolds(`${f1}\n\n${f2}`, 1000);
    expect(out).toContain("[Boxmaker fold 1: 4 messages of epoch 0]\n(summary dropped");
    expect(out).toContain(`blob:sha256:${H("b")}`);
    expect(out).toContain(f2);
    expect(boundFolds(`${f1}\n\n${f2}`, 100_000)).toBe(`${f1}\n\n${f2}`);
  });
});
