import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { InferService, createClient } from "@boxmaker/common";
import { RealLlama, contractOf, haveRealLlama } from "./support/real-llama.js";
import { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";

/**
 * tiny-tool writes until max_tokens every time, so a turn only ever ends at a
 * budget: the harshest test of `--max-tokens`. The turn's prompt and generated
 * tokens together must stay within it.
 */
describe.skipIf(!haveRealLlama("token budgets against the real llama-server"))("real llama-server: token budgets", () => {
  let tmp: ReturnType<typeof tempDir>;
  let llama: RealLlama;
  let stack: Stack;

  beforeAll(async () => {
    tmp = tempDir("bxr-budget-");
    llama = await new RealLlama({ model: "tool", socketPath: join(tmp.dir, "llama.sock"), ctxSize: 3 * 8192 }).start();
    stack = await new Stack(tmp.dir, {
      upstream: { socketPath: llama.socketPath, contract: await contractOf(llama) },
      // A per-request maximum below the budget: the turn makes several requests, each capped.
      loopd: { max_tokens: 200 },
    }).start();
    await inferproxyReady(stack.sockets.inferproxy);
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await llama?.close();
    tmp?.cleanup();
  });

  it.each([1600])("run --max-tokens %i ends within it", async (budget) => {
    const r = await stack.cli(["run", "--json", "--max-tokens", String(budget), "Write a long story into story.txt"], { timeoutMs: 280_000 });
    const events = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, any>);
    const done = events.find((e) => e.turn_done)?.turn_done;
    expect(done, r.stdout + r.stderr).toBeDefined();
    const t = done.timings;
    const total = (t.prompt_n ?? 0) + (t.predicted_n ?? 0);
    expect(done.finish_reason).toBe("budget");
    expect(r.code).toBe(3);
    expect(t.predicted_n).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(budget);
    expect(done.iterations).toBeGreaterThanOrEqual(2);
    const breach = events.find((e) => e.budget_breach)?.budget_breach;
    expect(breach).toMatchObject({ budget: "total_tokens" });
  }, 300_000);
});

/** Waits until inferproxy's start-up self-test against the real server has passed. */
async function inferproxyReady(socket: string, timeoutMs = 60_000): Promise<void> {
  const client = createClient(InferService, socket);
  const deadline = Date.now() + timeoutMs;
  let last = "";
  try {
    for (;;) {
      try {
        const s = await client.status({}, { timeoutMs: 2000 });
        if (s.selfTest?.passed) return;
        last = s.selfTest?.ran ? `self-test failed: ${s.selfTest.mismatches.join("; ")}` : `server ${s.serverState}`;
      } catch (err) {
        last = (err as Error).message;
      }
      if (Date.now() > deadline) throw new Error(`inferproxy not ready: ${last}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    client.close();
  }
}
