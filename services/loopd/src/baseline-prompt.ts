import { BASELINE_PROMPT_BUDGET_TOKENS, type Logger } from "@boxmaker/common";
import { instructionsFileOf } from "./project-instructions.js";

/** What a new session's first request would carry before the person's message. */
export interface BaselineParts {
  systemJson: string;
  toolsJson: string;
}

export interface BaselineReport {
  tokens: number;
  budgetTokens: number;
  instructionsFile: string;
  tools: number;
  error: string;
}

/**
 * The baseline prompt, counted by the server's tokenizer: what every new
 * session and every fold pays before a word of its own. Counted again when
 * the parts change (a new AGENTS.md, another tools array) or the server does
 * (a new self-test: another model or template), else the last count stands;
 * over the budget is logged once per count.
 */
export class BaselinePrompt {
  private last: { key: string; report: BaselineReport } | undefined;

  constructor(
    private readonly parts: () => Promise<BaselineParts>,
    private readonly count: (
      messagesJson: string,
      toolsJson: string,
      signal: AbortSignal,
    ) => Promise<number | undefined>,
    private readonly log: Logger,
    private readonly budgetTokens = BASELINE_PROMPT_BUDGET_TOKENS,
  ) {}

  /** The report for the server whose self-test ran at `serverCheckedAt` (0: none has, nothing is counted). */
  async report(serverCheckedAt: number, signal: AbortSignal): Promise<BaselineReport> {
    let p: BaselineParts;
    try {
      p = await this.parts();
    } catch (err) {
      return this.failed("", 0, `the tools array could not be had: ${(err as Error).message}`);
    }
    const instructionsFile = instructionsFileOf(p.systemJson);
    const tools = toolCount(p.toolsJson);
    if (!serverCheckedAt) return this.failed(instructionsFile, tools, "llama-server has not passed a self-test yet");
    const key = `${serverCheckedAt}\n${p.systemJson}\n${p.toolsJson}`;
    if (this.last?.key === key) return this.last.report;
    const tokens = await this.count(`[${p.systemJson}]`, p.toolsJson, signal);
    if (tokens === undefined)
      return this.failed(instructionsFile, tools, "the server could not count it (no /apply-template or /tokenize)");
    const report = { tokens, budgetTokens: this.budgetTokens, instructionsFile, tools, error: "" };
    this.last = { key, report };
    if (tokens > this.budgetTokens)
      this.log.warn(
        { tokens, budget: this.budgetTokens, instructions_file: instructionsFile, tools },
        "the baseline prompt is over its budget: every new session pays it before a word of its own",
      );
    return report;
  }

  private failed(instructionsFile: string, tools: number, error: string): BaselineReport {
    return { tokens: 0, budgetTokens: this.budgetTokens, instructionsFile, tools, error };
  }
}

function toolCount(toolsJson: string): number {
  try {
    const a = JSON.parse(toolsJson) as unknown;
    return Array.isArray(a) ? a.length : 0;
  } catch {
    return 0;
  }
}
