import { describe, expect, it } from "vitest";
import { haveRealLlama } from "./support/real-llama.js";
import { useRealStack } from "./support/use-real-stack.js";

/**
 * tiny-tool writes until max_tokens every time, so a turn only ever ends at a
 * budget: the harshest test of `--max-total-tokens`. The turn's prompt and generated
 * tokens together must stay within it.
 */
describe.skipIf(!haveRealLlama("token budgets against the real llama-server"))(
  "real llama-server: token budgets",
  () => {
    // A per-request maximum below the budget: the turn makes several requests, each capped.
    const real = useRealStack("bxr-budget-", { model: "tool", ctxSize: 3 * 8192 }, { loopd: { max_tokens: 200 } });

    // The first request's prompt is ~1,300 tokens (ten core tools): 2,000 leaves room for two or more capped requests.
    it.each([2000])(
      "run --max-total-tokens %i ends within it",
      async (budget) => {
        const r = await real.stack.cli(
          ["run", "--json", "--max-total-tokens", String(budget), "Write a long story into story.txt"],
          { timeoutMs: 280_000 },
        );
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
      },
      300_000,
    );
  },
);
