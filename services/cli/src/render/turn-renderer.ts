import type { SessionEvent } from "@boxmaker/common";
import { ToolDecision } from "@boxmaker/common";
import type { Style } from "./style.js";
import { ExitCode } from "../exit-codes.js";
import { ProgressLine } from "./progress.js";

export interface RenderOptions {
  out: NodeJS.WritableStream;
  err: NodeJS.WriteStream;
  style: Style;
  /** Show reasoning text (dimmed); otherwise a one-line thinking summary. */
  showReasoning: boolean;
  /** Longest tool result excerpt shown, in lines. */
  resultLines?: number;
}

const DECISION: Record<number, string> = {
  [ToolDecision.ALLOWED]: "allowed",
  [ToolDecision.DENIED]: "denied",
  [ToolDecision.STAGED]: "staged for approval",
  [ToolDecision.UNSPECIFIED]: "",
};

/** Turns one turn's events into what a person reads; returns the exit code the turn deserves. */
export class TurnRenderer {
  private atLineStart = true;
  private reasoningTokens = 0;
  private inReasoning = false;
  private sawDenied = false;
  private sawStaged = false;
  private readonly progress: ProgressLine;
  exitCode: ExitCode = ExitCode.ok;
  done = false;

  constructor(private readonly o: RenderOptions) {
    this.progress = new ProgressLine(o.err, o.style);
  }

  private write(text: string): void {
    if (!text) return;
    this.o.out.write(text);
    this.atLineStart = text.endsWith("\n");
  }

  private line(text: string): void {
    if (!this.atLineStart) this.write("\n");
    this.write(`${text}\n`);
  }

  private endReasoning(): void {
    if (!this.inReasoning) return;
    this.inReasoning = false;
    const s = this.o.style;
    if (this.o.showReasoning) this.line("");
    else this.line(s.dim(`(thought for ${this.reasoningTokens} tokens; --reasoning shows it)`));
  }

  handle(ev: SessionEvent): void {
    const s = this.o.style;
    const e = ev.event;
    if (e.case !== "progress") this.progress.clear();
    switch (e.case) {
      case "turnStarted":
        break;
      case "waiting":
        this.o.err.write(
          s.yellow(`waiting for slot ${e.value.slot}: ${e.value.position} ahead (held by ${e.value.heldBySession})\n`),
        );
        break;
      case "progress":
        this.progress.update(e.value.processed, e.value.total, e.value.cache);
        break;
      case "reasoning":
        if (!this.inReasoning) {
          this.inReasoning = true;
          this.reasoningTokens = 0;
          if (this.o.showReasoning) this.line(s.dim("thinking:"));
        }
        this.reasoningTokens++;
        if (this.o.showReasoning) this.write(s.dim(e.value.text));
        break;
      case "content":
        this.endReasoning();
        this.write(e.value.text);
        break;
      case "thinkingCap":
        this.endReasoning();
        this.line(s.yellow(`thinking cap reached at ${e.value.reasoningTokens} tokens${e.value.accepted ? "" : ` (${e.value.message})`}`));
        break;
      case "toolCall":
        this.endReasoning();
        this.line(s.cyan(`┌ ${e.value.name} ${truncate(e.value.arguments, 200)}`));
        break;
      case "toolDecision": {
        const d = e.value.decision;
        if (d === ToolDecision.DENIED) this.sawDenied = true;
        if (d === ToolDecision.STAGED) this.sawStaged = true;
        const color = d === ToolDecision.ALLOWED ? s.green : d === ToolDecision.DENIED ? s.red : s.yellow;
        const extra = e.value.proposalId ? ` — proposal ${e.value.proposalId}: \`boxmaker approve ${e.value.proposalId}\`` : "";
        this.line(s.cyan("│ ") + color(`${DECISION[d] ?? d}${e.value.rule ? ` (${e.value.rule})` : ""}${extra}`));
        break;
      }
      case "toolResult": {
        const lines = e.value.content.split("\n");
        const max = this.o.resultLines ?? 4;
        const shown = lines.slice(0, max).map((l) => s.cyan("│ ") + s.dim(truncate(l, 160)));
        for (const l of shown) this.line(l);
        const more = lines.length > max ? ` (+${lines.length - max} lines)` : "";
        this.line(s.cyan("└ ") + (e.value.isError ? s.red(`error${more}`) : s.dim(`ok${more}`)));
        if (e.value.isError && /still waits|nobody has decided|rejected/.test(e.value.content)) this.sawStaged = true;
        break;
      }
      case "budgetBreach":
        this.endReasoning();
        this.line(s.red(`budget ${e.value.budget} reached: ${e.value.used} of ${e.value.limit}`));
        break;
      case "turnDone": {
        this.endReasoning();
        const t = e.value.timings;
        const prompt = (t?.cacheN ?? 0) + (t?.promptN ?? 0);
        const summary = [
          e.value.finishReason,
          `${e.value.iterations} request${e.value.iterations === 1 ? "" : "s"}`,
          `${prompt} prompt tokens (${Math.round(e.value.cacheHitRatio * 100)}% cached)`,
          `${t?.predictedN ?? 0} generated`,
          `${(e.value.wallMs / 1000).toFixed(1)} s`,
        ].join(" · ");
        this.line(s.dim(`— ${summary}`));
        this.exitCode =
          e.value.finishReason === "budget"
            ? ExitCode.budget
            : e.value.finishReason === "cancelled"
              ? ExitCode.interrupted
              : this.sawDenied || this.sawStaged
                ? ExitCode.needsApproval
                : ExitCode.ok;
        this.done = true;
        break;
      }
      case "turnFailed":
        this.endReasoning();
        this.line(s.red(`turn failed: ${e.value.code}: ${e.value.message}`));
        this.exitCode = e.value.code === "UNAVAILABLE" ? ExitCode.unavailable : ExitCode.failed;
        this.done = true;
        break;
      default:
        break;
    }
  }

  finish(): void {
    this.progress.clear();
    if (!this.atLineStart) this.write("\n");
  }
}

function truncate(text: string, max: number): string {
  const one = text.replace(/\s+/g, " ");
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}
