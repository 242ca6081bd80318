import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { RealLlama, haveRealLlama, startStackOn } from "./support/real-llama.js";
import type { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { loopClient, newSession, turn, type LoopClient } from "../support/loop-client.js";
import { SessionStore } from "../../services/loopd/src/sessions/session-store.js";
import { createLogger } from "@boxmaker/common";

/**
 * tiny-tool calls a tool every time and never finishes its arguments, so
 * with a small max_tokens every response is a tool call cut off by
 * finish_reason "length". The real server refuses a request that replays
 * such a call unchanged ("Failed to parse tool call arguments as JSON"), so
 * each later turn of the session is the proof that the replay repairs it.
 */
describe.skipIf(!haveRealLlama("a cut-off tool call against the real llama-server"))(
  "real llama-server: a cut-off tool call",
  () => {
    let tmp: ReturnType<typeof tempDir>;
    let llama: RealLlama;
    let stack: Stack;
    let c: LoopClient;
    const CUT_OFF =
      '{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"write_file","arguments":"{\\"path\\":\\""},"id":"old1"}]}';
    let poisoned = "";

    beforeAll(async () => {
      tmp = tempDir("bxr-cut-");
      // A fixed sampling seed: the model then writes the same reply to the same prompt. Without one, one CI
      // run of many got a first turn with no tool call in it, so nothing to refuse (2026-12-01).
      llama = await new RealLlama({
        model: "tool",
        socketPath: join(tmp.dir, "llama.sock"),
        ctxSize: 24576,
        extraArgs: ["--seed", "7"],
      }).start();
      // A session written before the repair: its stored cut-off call broke every later request.
      const store = new SessionStore(join(tmp.dir, "state", "loopd"), createLogger("test", "silent"));
      const old = store.create({
        role: "main",
        title: "poisoned",
        parentId: "",
        slot: 0,
        systemJson: '{"role":"system","content":"You are a test."}',
        toolsJson:
          '[{"type":"function","function":{"name":"write_file","description":"write a file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}]',
      });
      old.append({ t: "turn_start", turn: 1, at: 1 });
      old.append({ t: "message", epoch: 0, json: '{"role":"user","content":"write it"}', at: 1 });
      old.append({ t: "message", epoch: 0, json: CUT_OFF, at: 1 });
      old.append({
        t: "message",
        epoch: 0,
        json: '{"role":"tool","tool_call_id":"old1","content":"error: not valid JSON"}',
        at: 1,
      });
      old.append({ t: "turn_end", turn: 1, reason: "stop", at: 1 });
      poisoned = old.id;
      store.closeAll();

      stack = await startStackOn(llama, tmp.dir, { loopd: { max_tokens: 16, budgets: { max_iterations: 2 } } });
      c = loopClient(stack.sockets.loopd);
    }, 120_000);

    afterAll(async () => {
      c?.close();
      await stack?.stop();
      await llama?.close();
      tmp?.cleanup();
    });

    const endOf = (events: Awaited<ReturnType<typeof turn>>) => {
      const last = events.at(-1)?.event;
      if (last?.case === "turnFailed") throw new Error(`turn failed: ${last.value.message}`);
      if (last?.case !== "turnDone") throw new Error(`turn did not finish: ${last?.case}`);
      return last.value;
    };

    it("is refused back to the model, and the session's next three turns all succeed", async () => {
      const id = await newSession(c, "cut-off");
      const first = await turn(c, id, "Write hello into a.txt");
      endOf(first);
      const results = first.flatMap((e) => (e.event.case === "toolResult" ? [e.event.value] : []));
      expect(results.length).toBeGreaterThan(0);
      expect(results[0]!.isError).toBe(true);
      expect(results[0]!.content).toMatch(/was not run: your reply reached its limit of 16 tokens/);
      for (const text of ["Try again", "Once more", "And again"]) {
        const done = endOf(await turn(c, id, text));
        expect(["stop", "length", "budget"]).toContain(done.finishReason);
        // The repaired replay is the same bytes every time: the server reuses the conversation so far.
        expect(done.timings!.cacheN).toBeGreaterThan(done.timings!.promptN);
      }
      // The log keeps the call as the server produced it: arguments cut off mid-JSON.
      const log = readFileSync(join(tmp.dir, "state", "loopd", "sessions", `${id}.jsonl`), "utf8");
      const calls = log
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).rec)
        .filter((r) => r.t === "message" && r.json.includes("tool_calls"))
        .map((r) => JSON.parse(r.json).tool_calls[0].function.arguments as string);
      expect(calls.length).toBeGreaterThanOrEqual(4);
      expect(calls.some((a) => a !== "{}" && !isJson(a))).toBe(true);
    }, 600_000);

    it("a session poisoned by an older loopd heals on its next turn", async () => {
      const done = endOf(await turn(c, poisoned, "Go on"));
      expect(["stop", "length", "budget"]).toContain(done.finishReason);
    }, 300_000);
  },
);

function isJson(t: string): boolean {
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}
