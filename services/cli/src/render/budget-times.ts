/**
 * A turn's budgets as time at the server's measured speed (`doctor`): a token
 * budget means little until it is said that 8,192 tokens are four and a half
 * minutes at 30 tokens/s, and that a 10-minute wall budget ends a turn before
 * its thinking budget and one full reply are spent.
 */
export interface BudgetFigures {
  maxIterations: number;
  maxTotalTokens: number;
  maxWallMs: number;
  maxThinkingTokens: number;
}

export interface SpeedFigures {
  generationTokensPerS: number;
  prefillTokensPerS: number;
  requests: number;
}

const minutes = (s: number) => (s < 90 ? `${Math.round(s)} s` : `${(s / 60).toFixed(1)} min`);
const tokens = (n: number) => n.toLocaleString("en-US");

export function renderBudgetTimes(
  b: BudgetFigures | undefined,
  maxTokens: number,
  speed: SpeedFigures | undefined,
): string {
  if (!b) return "budgets: loopd did not report them\n";
  const gen = speed?.generationTokensPerS ?? 0;
  if (!speed || speed.requests === 0 || gen <= 0)
    return "budgets at the server's speed: no completion measured yet (run a turn, then `boxmaker doctor` again)\n";
  const at = (n: number) => minutes(n / gen);
  const rows: [string, string][] = [[`a reply (max_tokens ${tokens(maxTokens)})`, `${at(maxTokens)} at most`]];
  if (b.maxThinkingTokens)
    rows.push([`thinking a turn (${tokens(b.maxThinkingTokens)} tokens)`, at(b.maxThinkingTokens)]);
  // total_tokens counts the prompt tokens read as well: all of them generated is the longest it can take.
  if (b.maxTotalTokens)
    rows.push([`read + generated a turn (${tokens(b.maxTotalTokens)} tokens)`, `${at(b.maxTotalTokens)} at most`]);
  const notes: string[] = [];
  if (b.maxWallMs) {
    const wallS = b.maxWallMs / 1000;
    rows.push([`wall time a turn (${minutes(wallS)})`, `${tokens(Math.floor(wallS * gen))} tokens generated at most`]);
    // A turn that thinks its whole budget then writes one full reply: does the wall budget let it?
    const oneFullTurn = (b.maxThinkingTokens + maxTokens) / gen;
    if (oneFullTurn > wallS)
      notes.push(
        `  note: thinking its whole budget and one full reply take ${minutes(oneFullTurn)}, more than the wall budget: ` +
          "at this speed the wall budget ends such a turn first (raise budgets.max_wall_ms, or lower the others)",
      );
  }
  const w = Math.max(...rows.map(([label]) => label.length));
  const lines = [
    `budgets at the server's speed (${gen.toFixed(1)} tokens/s generating` +
      (speed.prefillTokensPerS > 0 ? `, ${Math.round(speed.prefillTokensPerS)} tokens/s reading the prompt` : "") +
      `, over the last ${speed.requests} request${speed.requests === 1 ? "" : "s"}):`,
    ...rows.map(([label, value]) => `  ${label.padEnd(w)}  ${value}`),
    ...notes,
  ];
  return `${lines.join("\n")}\n`;
}
