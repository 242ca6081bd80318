import { describe, expect, it } from "vitest";
import pino from "pino";
import { BaselinePrompt } from "../src/baseline-prompt.js";

describe("the baseline prompt's count", () => {
  const system = JSON.stringify({ role: "system", content: "You are Boxmaker." });
  const tools = JSON.stringify([{ type: "function" }, { type: "function" }]);

  it("is counted once per server self-test and parts, and says why when it cannot be", async () => {
    const counted: string[] = [];
    let parts = { systemJson: system, toolsJson: tools };
    const b = new BaselinePrompt(
      async () => parts,
      async (m) => {
        counted.push(m);
        return m.length;
      },
      pino({ level: "silent" }),
      100,
    );
    const signal = new AbortController().signal;
    expect(await b.report(0, signal)).toMatchObject({
      tokens: 0,
      tools: 2,
      error: "llama-server has not passed a self-test yet",
    });
    const first = await b.report(1, signal);
    expect(first).toMatchObject({ tokens: `[${system}]`.length, budgetTokens: 100, tools: 2, error: "" });
    await b.report(1, signal);
    expect(counted).toHaveLength(1);
    await b.report(2, signal); // another self-test: another model or template may count differently
    expect(counted).toHaveLength(2);
    parts = { systemJson: JSON.stringify({ role: "system", content: "longer ".repeat(20) }), toolsJson: tools };
    expect((await b.report(2, signal)).tokens).toBeGreaterThan(first.tokens);
    expect(counted).toHaveLength(3);
  });

  it("a server that cannot count is said, not reported as 0 tokens", async () => {
    const b = new BaselinePrompt(
      async () => ({ systemJson: system, toolsJson: "[]" }),
      async () => undefined,
      pino({ level: "silent" }),
    );
    expect(await b.report(5, new AbortController().signal)).toMatchObject({
      tokens: 0,
      error: expect.stringMatching(/could not count/),
    });
  });
});
