import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { addBudgetOptions, budgetsFrom, type BudgetFlags } from "../src/budget-options.js";
import { UsageError } from "../src/errors.js";

const parse = (...argv: string[]) =>
  budgetsFrom(addBudgetOptions(new Command()).exitOverride().parse(argv, { from: "user" }).opts<BudgetFlags>());

describe("per-turn budget flags", () => {
  it("--max-total-tokens sets the turn's token budget; --max-tokens, its old name, still does", () => {
    expect(parse("--max-total-tokens", "1800")).toMatchObject({ maxTotalTokens: 1800 });
    expect(parse("--max-tokens", "1600")).toMatchObject({ maxTotalTokens: 1600 });
    expect(parse("--max-total-tokens", "1800", "--max-tokens", "5")).toMatchObject({ maxTotalTokens: 1800 });
  });

  it("leaves loopd's budgets alone when no flag is given, and refuses what is not a positive number", () => {
    expect(parse()).toBeUndefined();
    expect(parse("--max-seconds", "1.5")).toEqual({
      maxIterations: 0,
      maxTotalTokens: 0,
      maxWallMs: 1500,
      maxThinkingTokens: 0,
    });
    expect(() => parse("--max-total-tokens", "-3")).toThrow(UsageError);
    expect(() => parse("--max-iterations", "lots")).toThrow('--max-iterations needs a positive number, not "lots"');
  });

  it("keeps the old name out of --help", () => {
    const help = addBudgetOptions(new Command()).helpInformation();
    expect(help).toContain("--max-total-tokens <n>");
    expect(help).not.toContain("--max-tokens");
  });
});
