import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { RpcError, Status, ToolDecision } from "@boxmaker/common";
import { runTurn, type LoopDeps } from "../src/loop/agent-loop.js";
import { SessionStore } from "../src/sessions/session-store.js";
import type { Session } from "../src/sessions/session.js";
import { SessionLog } from "../src/sessions/session-log.js";
import { foldRecords } from "../src/sessions/session-state.js";
import { buildMessagesJson, unansweredToolCalls } from "../src/sessions/epoch-view.js";
import type { BudgetLimits } from "../src/loop/budgets.js";
import { eventsSoFar, fakeBroker, fakeInfer, silentLog, type ScriptedReply } from "./fakes.js";
import { tempDir } from "../../../test/support/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let store: SessionStore;
let s: Session;
const unlimited: BudgetLimits = { max_iterations: 0, max_total_tokens: 0, max_wall_ms: 0, max_thinking_tokens: 0 };

beforeEach(() => {
  tmp = tempDir();
  store = new SessionStore(tmp.dir, silentLog);
  s = store.create({
    role: "main",
    title: "t",
    parentId: "",
    slot: 0,
    systemJson: '{"role":"system","content":"sys"}',
    toolsJson: "[]",
  });
});
afterEach(() => {
  store.closeAll();
  tmp.cleanup();
});

function deps(replies: ScriptedReply[], broker = fakeBroker(), extra: Partial<LoopDeps> = {}) {
  const infer = fakeInfer(replies);
  return { infer, broker, d: { infer, broker, log: silentLog, maxTokens: 100, ...extra } as LoopDeps };
}

async function casesOf(sess: Session): Promise<string[]> {
  return (await eventsSoFar(sess.events)).map((ev) => ev.event?.case ?? "");
}

describe("agent loop", () => {
  it("runs model → tools in order → model, storing assistant messages exactly as returned", async () => {
    const { infer, broker, d } = deps([
      {
        content: "",
        toolCalls: [
          { id: "c1", name: "read_file", arguments: '{"path": "a.txt"}' },
          { id: "c2", name: "list_dir", arguments: '{ "path" : "." }' },
        ],
      },
      { content: "All done." },
    ]);
    const out = await runTurn(s, "read a.txt", unlimited, d, new AbortController().signal);
    expect(out.finishReason).toBe("stop");
    expect(out.finalText).toBe("All done.");
    expect(broker.calls.map((c) => [c.name, c.argumentsJson])).toEqual([
      ["read_file", '{"path": "a.txt"}'],
      ["list_dir", '{ "path" : "." }'],
    ]);
    // The second request is the first one plus exactly what was appended, byte for byte.
    const [r1, r2] = infer.requests;
    expect(r2!.messagesJson.startsWith(r1!.messagesJson.slice(0, -1))).toBe(true);
    expect(r2!.messagesJson).toContain('"arguments":"{ \\"path\\" : \\".\\" }"');
    // The log, reloaded from disk, replays to the same bytes.
    const reloaded = foldRecords(SessionLog.read(s.log.path).records);
    expect(buildMessagesJson(reloaded)).toBe(buildMessagesJson(s.state));
    // The turn's end is announced by the runner, not the loop (see session-runner.test.ts).
    expect(await casesOf(s)).toEqual([
      "turnStarted",
      "toolCall",
      "toolDecision",
      "toolResult",
      "toolCall",
      "toolDecision",
      "toolResult",
      "content",
    ]);
  });

  it("sends inferproxy only the messages it lacks, and the whole array again when it forgot them", async () => {
    const infer = fakeInfer(
      [
        { toolCalls: [{ id: "c1", name: "list_dir", arguments: "{}" }] },
        { content: "first done" },
        { toolCalls: [{ id: "c2", name: "list_dir", arguments: "{}" }] },
        { content: "second done" },
      ],
      { rememberMessages: true },
    );
    const d = { infer, broker: fakeBroker(), log: silentLog, maxTokens: 100 } as LoopDeps;
    await runTurn(s, "one", unlimited, d, new AbortController().signal);
    const [r1, r2] = infer.requests;
    expect(r1!.afterMessagesToken).toBe("");
    expect(r2!.afterMessagesToken).toBe("t1");
    // Only the assistant's tool call and its result: the system and user messages stay with inferproxy.
    expect((JSON.parse(r2!.messagesJson) as { role: string }[]).map((m) => m.role)).toEqual(["assistant", "tool"]);

    infer.forget(); // inferproxy restarted between turns
    const out = await runTurn(s, "two", unlimited, d, new AbortController().signal);
    expect(out.finalText).toBe("second done");
    const [, , refused, resent, r5] = infer.requests;
    expect(refused!.afterMessagesToken).toBe("t2");
    expect(resent!.afterMessagesToken).toBe("");
    expect(r5!.afterMessagesToken).toBe("t3");
    // Whatever was sent, each request amounted to the session's whole array, byte for byte.
    expect(infer.wholeArrays.at(-1)).toBe(
      buildMessagesJson(s.state).replace(/,\{"role":"assistant","content":"second done"\}\]$/, "]"),
    );
    expect(infer.wholeArrays.every((w, i, all) => i === 0 || w.startsWith(all[i - 1]!.slice(0, -1)))).toBe(true);
  });

  it("keeps the final message when the stream breaks after it (the answer was whole)", async () => {
    const scripted = fakeInfer([{ content: "whole answer" }]);
    const infer = {
      complete: (req: Parameters<typeof scripted.complete>[0], o?: { signal?: AbortSignal }) =>
        (async function* () {
          yield* scripted.complete(req, o);
          throw new RpcError(Status.CANCELLED, "the stream broke after its final event");
        })(),
    };
    const d = { infer, broker: fakeBroker(), log: silentLog, maxTokens: 100 } as LoopDeps;
    const out = await runTurn(s, "hi", unlimited, d, new AbortController().signal);
    expect(out.finishReason).toBe("stop");
    expect(out.finalText).toBe("whole answer");
  });

  it("sends invalid tool arguments back to the model as a tool error", async () => {
    const { broker, d } = deps([
      {
        toolCalls: [
          { id: "c1", name: "read_file", arguments: '{"path": "a', parseError: "Unexpected end of JSON input" },
        ],
        finishReason: "length",
      },
      { content: "sorry" },
    ]);
    const out = await runTurn(s, "go", unlimited, d, new AbortController().signal);
    expect(out.finishReason).toBe("stop");
    expect(broker.calls).toHaveLength(0);
    const toolMsg = s.state.history.find((m) => m.json.includes('"role":"tool"'))!;
    // Cut off by max_tokens (finish_reason length): the model is told so, and to call again shorter.
    expect(JSON.parse(toolMsg.json).content).toMatch(
      /read_file was not run: your reply reached its limit of 100 tokens/,
    );
  });

  const loopForever: ScriptedReply = {
    toolCalls: [{ id: "x", name: "list_dir", arguments: "{}" }],
    promptN: 100,
    predictedN: 50,
  };

  it.each([
    ["iterations", { max_iterations: 3 }, 3],
    ["total_tokens", { max_total_tokens: 400 }, 450],
  ] as const)(
    "the %s budget ends the turn with its own event and the session stays usable",
    async (name, limit, used) => {
      const { d } = deps(
        Array.from({ length: 10 }, () => ({
          ...loopForever,
          toolCalls: [{ ...loopForever.toolCalls![0]!, id: `x${Math.random()}` }],
        })),
      );
      const out = await runTurn(s, "loop", { ...unlimited, ...limit }, d, new AbortController().signal);
      const seen = (await eventsSoFar(s.events)).flatMap((ev) =>
        ev.event?.case === "budgetBreach" ? [ev.event.value] : [],
      );
      expect(out.finishReason).toBe("budget");
      expect(seen).toEqual([expect.objectContaining({ budget: name, used: BigInt(used) })]);
      expect(unansweredToolCalls(s.state)).toEqual([]);
      const next = await runTurn(s, "again", unlimited, deps([{ content: "fine" }]).d, new AbortController().signal);
      expect(next.finishReason).toBe("stop");
    },
  );

  it("the wall-clock budget stops a request that is still streaming", async () => {
    const { d } = deps([{ content: "late", delayMs: 5_000 }]);
    const out = await runTurn(s, "slow", { ...unlimited, max_wall_ms: 50 }, d, new AbortController().signal);
    expect(out.finishReason).toBe("budget");
    expect(out.breach?.budget).toBe("wall_ms");
    expect(s.state.turnOpen).toBe(false);
  });

  it("passes the thinking budget as a cap and reports when it fires", async () => {
    const { infer, d } = deps([{ reasoning: ["a", "b"], thinkingCapAt: 2, content: "answer" }]);
    const out = await runTurn(s, "think", { ...unlimited, max_thinking_tokens: 2 }, d, new AbortController().signal);
    const breaches = (await eventsSoFar(s.events)).flatMap((ev) =>
      ev.event?.case === "budgetBreach" ? [ev.event.value.budget ?? ""] : [],
    );
    expect(infer.requests[0]!.thinkingCapTokens).toBe(2);
    expect(breaches).toEqual(["thinking_tokens"]);
    expect(out.finishReason).toBe("stop");
  });

  it("cancelling mid-turn answers open tool calls and closes the turn", async () => {
    const ac = new AbortController();
    const broker = fakeBroker(() => {
      ac.abort(new Error("operator"));
      return {};
    });
    const { d } = deps(
      [
        {
          toolCalls: [
            { id: "a", name: "list_dir", arguments: "{}" },
            { id: "b", name: "list_dir", arguments: "{}" },
          ],
        },
      ],
      broker,
    );
    const out = await runTurn(s, "go", unlimited, d, ac.signal);
    expect(out.finishReason).toBe("cancelled");
    expect(unansweredToolCalls(s.state)).toEqual([]);
    expect(s.state.turnOpen).toBe(false);
  });

  it("waits for a person's decision on a staged call and returns it to the model", async () => {
    const broker = fakeBroker(() => ({ decision: ToolDecision.STAGED, proposalId: "p1", content: "staged" }));
    const { d } = deps(
      [
        { toolCalls: [{ id: "w", name: "write_file", arguments: '{"path":"x","content":"y"}' }] },
        { content: "written" },
      ],
      broker,
      {
        awaitDecision: async (id) => ({ isError: false, content: `applied ${id}` }),
      },
    );
    await runTurn(s, "write", unlimited, d, new AbortController().signal);
    const tool = s.state.history.find((m) => m.json.includes('"tool_call_id":"w"'))!;
    expect(JSON.parse(tool.json).content).toBe("applied p1");
  });

  it("time spent waiting for a person does not count against the wall-clock budget", async () => {
    // A clock the test moves: only the person's wait takes time, so the turn's own time is exactly 0.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    try {
      const broker = fakeBroker(() => ({ decision: ToolDecision.STAGED, proposalId: "p2", content: "staged" }));
      let asked!: () => void;
      const personAsked = new Promise<void>((r) => (asked = r));
      let decide!: () => void;
      const { d } = deps(
        [
          { toolCalls: [{ id: "w2", name: "write_file", arguments: '{"path":"x","content":"y"}' }] },
          { content: "written" },
        ],
        broker,
        {
          awaitDecision: async (id) => {
            asked();
            await new Promise<void>((r) => (decide = r));
            return { isError: false, content: `applied ${id}` };
          },
        },
      );
      const turn = runTurn(s, "write", { ...unlimited, max_wall_ms: 150 }, d, new AbortController().signal);
      await personAsked;
      vi.advanceTimersByTime(10_000); // the person takes their time; the 150 ms budget must not fire
      decide();
      const out = await turn;
      expect(out.finishReason).toBe("stop");
      expect(out.breach).toBeUndefined();
      expect(out.wallMs).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("crash recovery", () => {
  it("marks an interrupted turn and answers its dangling tool call", () => {
    s.append({ t: "turn_start", turn: 1, at: 1 });
    s.append({ t: "message", epoch: 0, json: '{"role":"user","content":"x"}', at: 1 });
    s.append({
      t: "message",
      epoch: 0,
      json: '{"role":"assistant","content":null,"tool_calls":[{"id":"k","type":"function","function":{"name":"run_command","arguments":"{}"}}]}',
      at: 1,
    });
    store.closeAll();
    const again = new SessionStore(tmp.dir, silentLog);
    const { interrupted } = again.loadAll();
    expect(interrupted).toEqual([s.id]);
    const st = again.get(s.id)!.state;
    expect(st.turnOpen).toBe(false);
    expect(st.lastTurnEnd).toBe("interrupted");
    expect(unansweredToolCalls(st)).toEqual([]);
    expect(st.history.at(-1)!.json).toContain("interrupted");
    again.closeAll();
    store = new SessionStore(tmp.dir, silentLog);
  });
});
