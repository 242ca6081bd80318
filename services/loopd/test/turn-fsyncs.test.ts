import { describe, expect, it, vi } from "vitest";
import { runTurn } from "../src/loop/agent-loop.js";
import { SessionLog } from "../src/sessions/session-log.js";
import { fakeBroker, fakeInfer, silentLog } from "./fakes.js";
import { sessionPerTest } from "./session-fixture.js";

// How many times a turn waits for the disk: each fsync is on the path to the
// user's answer (hundreds of microseconds on an SSD, milliseconds on many).
const fsyncs = vi.hoisted(() => ({ count: 0 }));
vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  return {
    ...fs,
    fsyncSync: (fd: number) => {
      fsyncs.count++;
      fs.fsyncSync(fd);
    },
  };
});

const fx = sessionPerTest();
const unlimited = { max_iterations: 0, max_total_tokens: 0, max_wall_ms: 0, max_thinking_tokens: 0 };

const turn = (replies: Parameters<typeof fakeInfer>[0]) => {
  const infer = fakeInfer(replies);
  return runTurn(
    fx.session,
    "hello",
    unlimited,
    { infer, broker: fakeBroker(), log: silentLog, maxTokens: 100 },
    new AbortController().signal,
  );
};

describe("a turn's fsyncs", () => {
  it("an answer with no tool call: two (the user's message; the answer with the turn's end), and both are on disk", async () => {
    fsyncs.count = 0;
    await turn([{ content: "hi there" }]);
    expect(fsyncs.count).toBe(2);
    const recs = SessionLog.read(fx.session.log.path).records.slice(-2);
    expect(recs.map((r) => r.t)).toEqual(["message", "turn_end"]);
    expect(JSON.stringify(recs[0])).toContain("hi there");
  });

  it("a tool call is durable before the tool runs: its answer is not left for the next write", async () => {
    fsyncs.count = 0;
    await turn([{ toolCalls: [{ id: "c1", name: "read_file", arguments: '{"path":"a"}' }] }, { content: "done" }]);
    // user message; the tool-calling answer; the tool's result; the last answer with the turn's end
    expect(fsyncs.count).toBe(4);
  });
});
