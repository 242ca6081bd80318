import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RpcError, Status } from "@boxmaker/common";
import { runTurn, type LoopDeps } from "../src/loop/agent-loop.js";
import { estimateNewPromptTokens } from "../src/sessions/token-counts.js";
import { SessionStore } from "../src/sessions/session-store.js";
import type { Session } from "../src/sessions/session.js";
import { SessionLog } from "../src/sessions/session-log.js";
import { applyRecord, foldRecords } from "../src/sessions/session-state.js";
import { replayableJson } from "../src/sessions/replay.js";
import { buildMessagesJson, epochBlobRefs, messagesBytes } from "../src/sessions/epoch-view.js";
import { TurnBudget, type BudgetLimits } from "../src/loop/budgets.js";
import { cutForPerson } from "../src/error-text.js";
import { fakeBroker, fakeInfer, silentLog, type ScriptedReply } from "./fakes.js";
import { tempDir } from "../../../test/support/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let store: SessionStore;
let s: Session;
const unlimited: BudgetLimits = { max_iterations: 0, max_total_tokens: 0, max_wall_ms: 0, max_thinking_tokens: 0 };
const SYSTEM = '{"role":"system","content":"sys"}';

beforeEach(() => {
  tmp = tempDir();
  store = new SessionStore(tmp.dir, silentLog);
  s = store.create({ role: "main", title: "t", parentId: "", slot: 0, systemJson: SYSTEM, toolsJson: "[]" });
});
afterEach(() => {
  store.closeAll();
  tmp.cleanup();
});

function deps(replies: ScriptedReply[], maxTokens = 100) {
  const infer = fakeInfer(replies);
  return { infer, d: { infer, broker: fakeBroker(), log: silentLog, maxTokens } as LoopDeps };
}

// What the real server streamed for a write_file call cut off by max_tokens (tiny-tool, max_tokens 20).
const CUT_OFF =
  '{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"write_file","arguments":"{\\"path\\":\\""}}]}';

describe("replay of model output the server would refuse", () => {
  it("sends a tool call with unparseable arguments as {} and leaves every other message byte for byte", () => {
    const fixed = replayableJson(CUT_OFF);
    expect(JSON.parse(fixed)).toEqual({
      role: "assistant",
      content: "",
      tool_calls: [{ id: "c1", type: "function", function: { name: "write_file", arguments: "{}" } }],
    });
    expect(replayableJson(fixed)).toBe(fixed);
    for (const ok of [
      '{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"x","arguments":"{ \\"a\\" : 1 }"}}]}',
      '{"role":"assistant","content":"hi \\u00e9"}',
      '{"role":"tool","tool_call_id":"c1","content":"{\\"path\\":\\""}',
    ]) {
      expect(replayableJson(ok)).toBe(ok);
    }
    for (const bad of ['""', '"[1]"', '"null"', '"\\"str\\""']) {
      const msg = `{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"x","arguments":${bad}}}]}`;
      expect(JSON.parse(replayableJson(msg)).tool_calls[0].function.arguments).toBe("{}");
    }
  });

  it("a cut-off call is refused with the reason, stored as produced, and replayed repaired on every later request", async () => {
    const { infer, d } = deps([
      {
        toolCalls: [
          {
            id: "c1",
            name: "write_file",
            arguments: '{"path":"',
            parseError: "arguments are not valid JSON (the call was cut off)",
          },
        ],
        finishReason: "length",
      },
      { content: "ok" },
      { content: "again" },
    ]);
    const out = await runTurn(s, "write it", unlimited, d, new AbortController().signal);
    expect(out.finishReason).toBe("stop");
    const tool = s.state.history.find((m) => m.json.includes('"role":"tool"'))!;
    expect(JSON.parse(tool.json).content).toMatch(/write_file was not run: your reply reached its limit of 100 tokens/);
    expect(tool.tool?.rule).toBe("arguments-cut-off");
    // The log keeps the server's text.
    const stored = s.state.history.find((m) => m.json.includes("tool_calls"))!;
    expect(JSON.parse(stored.json).tool_calls[0].function.arguments).toBe('{"path":"');
    await runTurn(s, "next", unlimited, d, new AbortController().signal);
    const [, r2, r3] = infer.requests.map((r) => r.messagesJson);
    for (const r of [r2!, r3!]) {
      expect(r).toContain('"arguments":"{}"');
      expect(r).not.toContain('"arguments":"{\\"path\\":\\""');
    }
    // Byte-stable: the later request starts with the earlier one.
    expect(r3!.startsWith(r2!.slice(0, -1))).toBe(true);
  });

  it("an older log that holds such a message heals on its next turn", async () => {
    // Written the way loopd wrote it before the repair: the cut-off message, its refusal, the turn's end.
    s.append({ t: "turn_start", turn: 1, at: 1 });
    s.append({ t: "message", epoch: 0, json: '{"role":"user","content":"write it"}', at: 1 });
    s.append({ t: "message", epoch: 0, json: CUT_OFF, at: 1 });
    s.append({
      t: "message",
      epoch: 0,
      json: '{"role":"tool","tool_call_id":"c1","content":"error: not valid JSON"}',
      at: 1,
    });
    s.append({ t: "turn_end", turn: 1, reason: "stop", at: 1 });
    const path = s.log.path;
    store.closeAll();
    store = new SessionStore(tmp.dir, silentLog);
    store.loadAll();
    s = store.get(s.id)!;
    const { infer, d } = deps([{ content: "fine" }]);
    const out = await runTurn(s, "go on", unlimited, d, new AbortController().signal);
    expect(out.finishReason).toBe("stop");
    expect(infer.requests[0]!.messagesJson).toContain('"arguments":"{}"');
    expect(infer.requests[0]!.messagesJson.startsWith(`[${SYSTEM},{"role":"user","content":"write it"},`)).toBe(true);
    // The record on disk is unchanged.
    const onDisk = SessionLog.read(path)
      .records.filter((r) => r.t === "message")
      .map((r) => (r as { json: string }).json);
    expect(onDisk).toContain(CUT_OFF);
    expect(buildMessagesJson(foldRecords(SessionLog.read(path).records))).toBe(buildMessagesJson(s.state));
  });
});

describe("errors a person sees", () => {
  it("are cut to a readable length, naming how much is in the daemon log", () => {
    expect(cutForPerson("short")).toBe("short");
    const long = `HTTP 500: Failed to parse tool call arguments as JSON: ${"x".repeat(2000)}`;
    const cut = cutForPerson(long);
    expect(cut.length).toBeLessThan(560);
    expect(cut).toMatch(/… \(\d+ more chars in the daemon log\)$/);
    expect(cut.startsWith("HTTP 500: Failed to parse")).toBe(true);
  });

  it("a failed turn reports the cut message", async () => {
    const long = `llama-server answered 500: ${"y".repeat(3000)}`;
    const { d } = deps([{ error: new RpcError(Status.INTERNAL, long) }]);
    const out = await runTurn(s, "go", unlimited, d, new AbortController().signal);
    expect(out.finishReason).toBe("failed");
    expect(out.error!.message.length).toBeLessThanOrEqual(560);
    expect(out.error!.message).toMatch(/more chars in the daemon log/);
  });
});

describe("token budget", () => {
  it("caps max_tokens to what the budget has left after the prompt, never above the per-request max", () => {
    const b = new TurnBudget({ ...unlimited, max_total_tokens: 1200 });
    expect(b.maxTokensForNextRequest(8192, 650)).toBe(550);
    expect(b.maxTokensForNextRequest(300, 650)).toBe(300);
    b.recordRequest(650, 550, 0);
    expect(b.maxTokensForNextRequest(8192, 20)).toBe(0);
    expect(new TurnBudget(unlimited).maxTokensForNextRequest(8192, 1e9)).toBe(8192);
  });

  it("estimates the whole prompt for a fresh slot and only the new messages after a response", async () => {
    const fresh = estimateNewPromptTokens(s.state);
    expect(fresh).toBeGreaterThan(0);
    const { d } = deps([{ content: "x", promptN: 30, predictedN: 5 }]);
    await runTurn(s, "hello", unlimited, d, new AbortController().signal);
    s.append({ t: "message", epoch: 0, json: '{"role":"user","content":"more"}', at: 1 });
    expect(estimateNewPromptTokens(s.state)).toBeLessThan(30);
  });

  it("a turn of cut-off tool calls stays within --max-tokens", async () => {
    // The model writes until max_tokens every time (tiny-tool), each time a call the loop refuses.
    const replies: ScriptedReply[] = Array.from({ length: 20 }, (_, i) => ({
      toolCalls: [{ id: `c${i}`, name: "write_file", arguments: '{"path":"', parseError: "cut off" }],
      finishReason: "length",
      promptN: i === 0 ? 650 : 40,
      predictedN: 100_000,
    }));
    // A tools array of about 600 tokens, as the first request reads it whole.
    const tools = JSON.stringify([
      { type: "function", function: { name: "write_file", description: "w ".repeat(900) } },
    ]);
    const t = store.create({ role: "main", title: "t", parentId: "", slot: 0, systemJson: SYSTEM, toolsJson: tools });
    const { infer, d } = deps(replies, 8192);
    const out = await runTurn(t, "go", { ...unlimited, max_total_tokens: 1200 }, d, new AbortController().signal);
    expect(out.finishReason).toBe("budget");
    expect(out.promptN + out.predictedN).toBeLessThanOrEqual(1200);
    expect(infer.requests.every((r) => r.maxTokens >= 1 && r.maxTokens <= 8192)).toBe(true);
  });
});

describe("messagesBytes", () => {
  it("equals the UTF-8 size of the messages array as it grows, without rebuilding it", () => {
    const st = foldRecords([
      { t: "session", id: "s", role: "main", title: "", parent_id: "", slot: 0, at: 1 },
      { t: "epoch", epoch: 0, system_json: '{"role":"system","content":"sys ✓"}', tools_json: "[]", at: 1 },
    ]);
    expect(messagesBytes(st)).toBe(Buffer.byteLength(buildMessagesJson(st)));
    for (const json of ['{"role":"user","content":"héllo"}', '{"role":"assistant","content":"ok 😀"}']) {
      applyRecord(st, { t: "message", epoch: 0, json, at: 2 });
      expect(messagesBytes(st)).toBe(Buffer.byteLength(buildMessagesJson(st)));
    }
  });
});

describe("epochBlobRefs", () => {
  it("names every blob the epoch's system prompt and messages point at, once, in order", () => {
    const h = (c: string) => `blob:sha256:${c.repeat(64)}`;
    const st = foldRecords([
      { t: "session", id: "s", role: "main", title: "", parent_id: "", slot: 0, at: 1 },
      {
        t: "epoch",
        epoch: 0,
        system_json: JSON.stringify({ role: "system", content: `folded: ${h("a")}` }),
        tools_json: "[]",
        at: 1,
      },
    ]);
    expect(epochBlobRefs(st)).toEqual([h("a")]);
    applyRecord(st, {
      t: "message",
      epoch: 0,
      json: JSON.stringify({ role: "user", content: `see ${h("b")} and ${h("a")}` }),
      at: 2,
    });
    applyRecord(st, {
      t: "message",
      epoch: 0,
      json: JSON.stringify({ role: "tool", tool_call_id: "x", content: `more in ${h("c")}` }),
      at: 2,
    });
    expect(epochBlobRefs(st)).toEqual([h("a"), h("b"), h("c")]);
    // A new epoch pins only what it names.
    applyRecord(st, {
      t: "epoch",
      epoch: 1,
      system_json: JSON.stringify({ role: "system", content: `folded: ${h("c")}` }),
      tools_json: "[]",
      at: 3,
    });
    expect(epochBlobRefs(st)).toEqual([h("c")]);
  });
});
