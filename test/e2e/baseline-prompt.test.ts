import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useStack } from "../support/use-stack.js";

/**
 * What every new session sends before its first message (system prompt,
 * tools, project instructions) is counted by the server's tokenizer and held
 * to its budget: `status` gives the count, and says when an AGENTS.md pushes
 * it over; the count follows the file.
 */
describe("the baseline prompt against its budget", () => {
  const t = useStack("bxbp-");

  it("is counted by the server, within budget with the core tools, and over it with a long AGENTS.md", async () => {
    const before = JSON.parse((await t.stack.cli(["status", "--json"])).stdout).baseline_prompt;
    expect(before).toMatchObject({ budget_tokens: 3000 });
    expect(before.tools).toBeGreaterThanOrEqual(10);
    expect(before.tokens).toBeGreaterThan(100);
    expect(before.tokens).toBeLessThanOrEqual(3000);
    const text = (await t.stack.cli(["status"])).stdout;
    expect(text).toContain(
      `baseline prompt  ${before.tokens.toLocaleString("en-US")} tokens of 3,000 (system prompt, ${before.tools} tools)`,
    );

    // About 24 KiB of instructions: well past what is left of the budget.
    writeFileSync(
      join(t.stack.workspace, "AGENTS.md"),
      `${"Always check the changelog before you edit a file. ".repeat(480)}\n`,
    );
    const after = JSON.parse((await t.stack.cli(["status", "--json"])).stdout).baseline_prompt;
    expect(after.instructions_file).toBe(join(t.stack.workspace, "AGENTS.md"));
    expect(after.tokens).toBeGreaterThan(3000);
    const over = (await t.stack.cli(["status"])).stdout;
    expect(over).toContain(
      `over budget by ${(after.tokens - 3000).toLocaleString("en-US")}; every new session pays it`,
    );
    expect(over).toContain("AGENTS.md)");
  });
});
