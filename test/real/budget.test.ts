import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { RealLlama, haveRealLlama, startStackOn } from "./support/real-llama.js";
import type { Stack } from "../support/stack.js";
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
    // A per-request maximum below the budget: the turn makes several requests, each capped.
    stack = await startStackOn(llama, tmp.dir, { loopd: { max_tokens: 200 } });
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

