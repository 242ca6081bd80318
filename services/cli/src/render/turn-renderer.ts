import { ToolDecision, type SessionEvent } from "@boxmaker/common/client";
import type { Style } from "./style.js";
import { planLines } from "./plan.js";
import { ProgressLine } from "./progress.js";
import { truncate } from "./text.js";
import { decisionText, retryResentText, retryWaitingText, sizeText, thinkingCapText } from "./turn-event-text.js";
import { eraseLine, writeText } from "./terminal-safe.js";

export interface RenderOptions {
  out: NodeJS.WritableStream;
  err: NodeJS.WriteStream;
  style: Style;
  /** Show reasoning text (dimmed); otherwise a one-line thinking summary. */
  showReasoning: boolean;
  /** Longest tool result excerpt shown, in lines. */
  resultLines?: number;
}

/** Turns one turn's events into what a person reads. The exit code is TurnOutcome's job. */
export class TurnRenderer {
  private atLineStart = true;
  /** A retry line waiting for its end: the server's answer to the request sent again. */
  private retryOpen = false;
  private reasoningDeltas = 0;
  private inReasoning = false;
  private readonly progress: ProgressLine;
  /** A tool call being written, shown on a line redrawn in place (a terminal only) until the call is complete. */
  private growing: { name: string; bytes: number } | undefined;
  /** update_plan calls: the plan event shows them, not a frame (unless they fail). */
  private readonly planCalls = new Set<string>();

  constructor(private readonly o: RenderOptions) {
    this.progress = new ProgressLine(o.err, o.style);
  }

  private emit(text: string): void {
    if (!text) return;
    writeText(this.o.out, text);
    this.atLineStart = text.endsWith("\n");
  }

  private line(text: string): void {
    if (!this.atLineStart) this.emit("\n");
    this.emit(`${text}\n`);
  }

  private endReasoning(): void {
    if (!this.inReasoning) return;
    this.inReasoning = false;
    const s = this.o.style;
    if (this.o.showReasoning) this.line("");
    else this.line(s.dim(`(thought for ${this.reasoningDeltas} tokens; --reasoning shows it)`));
  }

  handle(ev: SessionEvent): void {
    const s = this.o.style;
    const e = ev.event;
    if (e.case !== "progress") this.progress.clear();
    if (this.growing && e.case !== "toolCallProgress") this.endGrowing(e.case === "toolCall");
    if (this.retryOpen && !(e.case === "retry" && e.value.phase === "resent")) {
      // Whatever comes instead of the answer (another break, the turn's end) starts its own line.
      this.retryOpen = false;
      this.emit("\n");
    }
    switch (e.case) {
      case "turnStarted":
        break;
      case "waiting":
        writeText(
          this.o.err,
          s.yellow(`waiting for slot ${e.value.slot}: ${e.value.position} ahead (held by ${e.value.heldBySession})\n`),
        );
        break;
      case "progress":
        this.progress.update(e.value.processed, e.value.total, e.value.cache);
        break;
      case "reasoning":
        if (!this.inReasoning) {
          this.inReasoning = true;
          this.reasoningDeltas = 0;
          if (this.o.showReasoning) this.line(s.dim("thinking:"));
        }
        // The server streams one token per delta, so deltas count tokens.
        this.reasoningDeltas++;
        if (this.o.showReasoning) this.emit(s.dim(e.value.text));
        break;
      case "content":
        this.endReasoning();
        this.emit(e.value.text);
        break;
      case "thinkingCap":
        this.endReasoning();
        this.line(s.yellow(thinkingCapText(e.value.reasoningTokens, e.value.accepted, e.value.message)));
        break;
      case "toolCallProgress":
        this.endReasoning();
        this.showGrowing(e.value.name, Number(e.value.argumentBytes));
        break;
      case "toolCall":
        this.endReasoning();
        if (e.value.name === "update_plan") {
          this.planCalls.add(e.value.callId);
          break;
        }
        this.line(s.cyan(`┌ ${s.bold(e.value.name)} ${truncate(e.value.arguments, 200)}`));
        break;
      case "toolDecision":
        if (this.planCalls.has(e.value.callId)) {
          if (e.value.decision === ToolDecision.ALLOWED) break;
          this.line(s.cyan(`┌ ${s.bold("update_plan")}`));
          this.planCalls.delete(e.value.callId);
        }
        this.line(s.cyan("│ ") + decisionText(s, e.value.decision, e.value.rule, e.value.proposalId));
        break;
      case "plan":
        for (const l of planLines(e.value.items, s)) this.line(l);
        break;
      case "toolResult": {
        if (this.planCalls.delete(e.value.callId) && !e.value.isError) break;
        const lines = e.value.content.replace(/\n+$/, "").split("\n");
        const max = this.o.resultLines ?? 4;
        for (const l of lines.slice(0, max)) this.line(s.cyan("│ ") + s.dim(truncate(l, 160)));
        const more = lines.length > max ? ` (+${lines.length - max} lines)` : "";
        this.line(s.cyan("└ ") + (e.value.isError ? s.red(`error${more}`) : s.dim(`ok${more}`)));
        break;
      }
      case "inputSpilled": {
        const v = e.value;
        const kb = (n: bigint) => `${(Number(n) / 1024).toFixed(1)} KB`;
        this.line(
          s.dim(
            `input: a ${v.kind} block of ${kb(v.bytes)} (${v.lines} lines) went to blob:sha256:${v.blobSha256.slice(0, 12)}…; ` +
              `the model sees ${v.form === "reduced" ? "all of it, reduced" : "an excerpt"} (${kb(v.shownBytes)}) and can read_blob / grep_blob the rest`,
          ),
        );
        break;
      }
      case "compacted": {
        const v = e.value;
        this.endReasoning();
        this.line(
          s.dim(
            `compacted into epoch ${v.epoch} (${v.reason}): ${v.foldedMessages} messages folded into a ${v.summaryBytes}-byte summary` +
              (v.carriedFoldBytes ? `, ${v.carriedFoldBytes} bytes of earlier folds carried verbatim` : "") +
              `, ${v.keptMessages} kept` +
              (v.spilledBlocks ? `, ${v.spilledBlocks} large blocks spilled to blobs` : "") +
              (v.beforeTokens ? ` (was ${v.beforeTokens} tokens)` : ""),
          ),
        );
        break;
      }
      case "retry": {
        const v = e.value;
        if (v.phase === "resent") {
          if (!this.retryOpen) break;
          this.retryOpen = false;
          this.emit(`${s.yellow(retryResentText(v.waitedMs, v.promptCached, v.promptReread))}\n`);
          break;
        }
        this.endReasoning();
        // One line for the whole retry: it ends when the server answers the request sent again.
        if (!this.atLineStart) this.emit("\n");
        this.emit(
          s.yellow(
            retryWaitingText(
              v.code,
              v.reason,
              v.attempt,
              v.maxAttempts,
              v.discardedContentChars,
              v.discardedReasoningTokens,
              v.waitMs,
            ),
          ),
        );
        this.retryOpen = true;
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
          ...(e.value.spilledBlocks
            ? [`${e.value.spilledBlocks} input block${e.value.spilledBlocks === 1 ? "" : "s"} spilled`]
            : []),
          ...(e.value.compactions ? [`${e.value.compactions} compaction${e.value.compactions === 1 ? "" : "s"}`] : []),
          // The session's Σprompt_n over the tokens truly new (1.00× is every byte reused).
          ...(e.value.cacheHealth?.requests ? [`reuse ${e.value.cacheHealth.ratio.toFixed(2)}×`] : []),
        ].join(" · ");
        this.line(s.dim(`— ${summary}`));
        break;
      }
      case "cacheWarning":
        this.endReasoning();
        this.line(s.yellow(`warning: ${e.value.message}`));
        break;
      case "turnFailed":
        this.endReasoning();
        this.line(s.red(`turn failed: ${e.value.code}: ${e.value.message}`));
        break;
      default:
        break;
    }
  }

  /**
   * The call's name at once and its arguments' size as they grow. On a
   * terminal one line redrawn in place; elsewhere nothing (the complete call
   * follows, and a log of sizes would only be noise).
   */
  private showGrowing(name: string, bytes: number): void {
    if (!(this.o.out as NodeJS.WriteStream).isTTY) return;
    if (this.growing) eraseLine(this.o.out);
    else if (!this.atLineStart) this.emit("\n");
    this.growing = { name, bytes };
    const s = this.o.style;
    this.emit(s.cyan(`┌ ${s.bold(name)} `) + s.dim(`writing… ${sizeText(bytes)}`));
  }

  /** A complete call replaces the line; anything else (a cut, a failure) leaves it standing as the last word on the call. */
  private endGrowing(replaced: boolean): void {
    this.growing = undefined;
    if (replaced) {
      eraseLine(this.o.out);
      this.atLineStart = true;
    } else this.emit("\n");
  }

  finish(): void {
    this.progress.clear();
    if (this.growing) this.endGrowing(false);
    if (!this.atLineStart) this.emit("\n");
  }
}
