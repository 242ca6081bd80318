import { describe, expect, it } from "vitest";
import { useStack } from "../support/use-stack.js";

/**
 * `boxmaker doctor` states a turn's budgets as time at the speed the server's
 * own timings showed: before any completion it says nothing was measured;
 * after a turn it gives the tokens/s and, for each budget, the minutes it lasts
 * at that speed, and says when the wall budget ends a full turn first.
 */
describe("doctor: the budgets at the server's measured speed", () => {
  const t = useStack("bxdb-", {
    loopd: { max_tokens: 6000, budgets: { max_thinking_tokens: 6000, max_wall_ms: 60_000, max_total_tokens: 0 } },
  });

  it("says nothing was measured before a completion, then the speed and each budget's time", async () => {
    const before = await t.stack.cli(["doctor"]);
    expect(before.stdout).toContain("budgets at the server's speed: no completion measured yet");

    // 60 tokens at 20 ms each: the server cannot have generated faster than 50 tokens/s.
    t.stack.sim.enqueue({ content: Array.from({ length: 60 }, (_, i) => `w${i} `), tokenDelayMs: 20 });
    const run = await t.stack.cli(["run", "hello"]);
    expect(run.code, run.stderr).toBe(0);

    const j = JSON.parse((await t.stack.cli(["doctor", "--json"])).stdout);
    const tps: number = j.throughput.generation_tokens_per_s;
    expect(j.throughput.requests).toBe(1);
    expect(tps).toBeGreaterThan(0);
    expect(tps).toBeLessThanOrEqual(50.5);
    expect(j.budgets).toMatchObject({ max_thinking_tokens: 6000, max_wall_ms: 60000 });
    expect(j.max_tokens_per_request).toBe(6000);

    const text = (await t.stack.cli(["doctor"])).stdout;
    expect(text).toContain(`budgets at the server's speed (${tps.toFixed(1)} tokens/s generating`);
    const min = (n: number) => (n / tps < 90 ? `${Math.round(n / tps)} s` : `${(n / tps / 60).toFixed(1)} min`);
    const row = (label: string, value: string) =>
      expect(text.split("\n").map((l) => l.replace(/ +/g, " "))).toContain(`  ${label} ${value}`.replace(/ +/g, " "));
    row("a reply (max_tokens 6,000)", `${min(6000)} at most`);
    row("thinking a turn (6,000 tokens)", min(6000));
    row("wall time a turn (60 s)", `${Math.floor(60 * tps).toLocaleString("en-US")} tokens generated at most`);
    // 12,000 tokens at ≤ 50 tokens/s is at least 4 minutes: more than the 60 s wall budget.
    expect(text).toContain("more than the wall budget: at this speed the wall budget ends such a turn first");
    expect(text).not.toContain("read + generated a turn");
  });
});
