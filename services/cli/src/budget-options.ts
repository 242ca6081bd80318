import { Option, type Command } from "commander";
import { UsageError } from "./errors.js";
import type { BudgetsInit } from "./turn-stream.js";

export interface BudgetFlags {
  maxIterations?: string;
  maxTotalTokens?: string;
  /** The old name of --max-total-tokens, still accepted (hidden from help). */
  maxTokens?: string;
  maxSeconds?: string;
  maxThinking?: string;
}

/** Per-turn budget flags; unset ones leave loopd's configured budgets in force. */
export function addBudgetOptions(cmd: Command): Command {
  return (
    cmd
      .addOption(new Option("--max-iterations <n>", "model requests per turn").helpGroup("Budgets:"))
      // Named after loopd's budgets.max_total_tokens: a turn's tokens, not one request's max_tokens.
      .addOption(new Option("--max-total-tokens <n>", "prompt + generated tokens per turn").helpGroup("Budgets:"))
      .addOption(new Option("--max-tokens <n>").hideHelp())
      .addOption(new Option("--max-seconds <n>", "wall-clock seconds per turn").helpGroup("Budgets:"))
      .addOption(new Option("--max-thinking <n>", "reasoning tokens per turn").helpGroup("Budgets:"))
  );
}

export function budgetsFrom(f: BudgetFlags): BudgetsInit | undefined {
  const n = (flag: string, v: string | undefined) => {
    if (v === undefined) return 0;
    const x = Number(v);
    if (!Number.isFinite(x) || x <= 0) throw new UsageError(`${flag} needs a positive number, not "${v}"`);
    return x;
  };
  const b = {
    maxIterations: Math.floor(n("--max-iterations", f.maxIterations)),
    maxTotalTokens: Math.floor(
      f.maxTotalTokens !== undefined ? n("--max-total-tokens", f.maxTotalTokens) : n("--max-tokens", f.maxTokens),
    ),
    maxWallMs: Math.round(n("--max-seconds", f.maxSeconds) * 1000),
    maxThinkingTokens: Math.floor(n("--max-thinking", f.maxThinking)),
  };
  return Object.values(b).some((v) => v > 0) ? b : undefined;
}
