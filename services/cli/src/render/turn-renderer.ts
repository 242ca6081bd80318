import { LOOP_TOOL, ToolDecision, type SessionEvent } from "@boxmaker/common/client";
import type { Style } from "./style.js";
import { planLines } from "./plan.js";
import { ProgressLine } from "./progress.js";
import { callLine, resultLines } from "./frame.js";
import { cut, wrapWords } from "./columns.js";
import {
  compactionText,
  decisionLines,
  inputSpilledText,
  retryResentText,
  retryWaitingText,
  sizeText,
  thinkingCapText,
  turnSummaryText,
} from "./turn-event-text.js";
import { eraseLine, writeText } from "./terminal-safe.js";
import type { LiveLine } from "./live-line.js";
import { AnswerView } from "./markdown/answer-view.js";

export interface RenderOptions {
  out: NodeJS.WritableStream;
  err: NodeJS.WriteStream;
  style: Style;
  /** Show reasoning text (dimmed); otherwise a one-line thinking summary. */
  showReasoning: boolean;
  /** The key that shows or hides the reasoning while it streams, named in the summary (chat on a terminal). */
  reasoningKey?: string;
  /** The turn's status line (a terminal): erased before every write, told after every event. */
  live?: LiveLine;
  /** Longest tool result excerpt shown, in lines. */
  resultLines?: number;
  /** The terminal's columns: every line the renderer composes fits them. Undefined when piped. */
  width?: number;
  /** Render the answer's Markdown (a terminal with colour); otherwise the model's text as it is. */
  markdown?: boolean;
}

/** Turns one turn's events into what a person reads. The exit code is TurnOutcome's job. */
export class TurnRenderer {
  private atLineStart = true;
  /** A retry line waiting for its end: the server's answer to the request sent again. */
  private retryOpen = false;
  private reasoningDeltas = 0;
  private inReasoning = false;
  /** The current block of reasoning, kept while hidden: the key shows it from its start. */
  private reasoningText = "";
  private showReasoning: boolean;
  private readonly progress: ProgressLine;
  /** A tool call being written, shown on a line redrawn in place (a terminal only) until the call is complete. */
  private growing: { name: string; bytes: number } | undefined;
  /** The slot the turn runs on, from its turn_started. */
  private slot: number | undefined;
  /** update_plan calls: the plan event shows them, not a frame (unless they fail). */
  private readonly planCalls = new Set<string>();

  /** The answer as Markdown (a terminal); undefined writes the text as it comes. */
  private readonly answer: AnswerView | undefined;

  constructor(private readonly o: RenderOptions) {
    this.progress = new ProgressLine(o.err, o.style);
    this.showReasoning = o.showReasoning;
    if (o.markdown) this.answer = new AnswerView(o.out, o.style, o.width);
  }

  /** The reasoning shown from now on (and the hidden part of the current block at once), or hidden from now on. */
  toggleReasoning(): void {
    this.o.live?.erase();
    this.showReasoning = !this.showReasoning;
    if (this.inReasoning && this.showReasoning) {
      this.line(this.o.style.dim("thinking:"));
      this.emit(this.o.style.dim(this.reasoningText));
    } else if (this.inReasoning) {
      this.line(
        this.o.style.dim(`(reasoning hidden${this.o.reasoningKey ? `; ${this.o.reasoningKey} shows it` : ""})`),
      );
    }
    this.o.live?.settle(this.atLineStart && !this.retryOpen);
  }

  get reasoningShown(): boolean {
    return this.showReasoning;
  }

  private emit(text: string): void {
    if (!text) return;
    this.o.live?.erase();
    writeText(this.o.out, text);
    this.atLineStart = text.endsWith("\n");
  }

  private line(text: string): void {
    if (!this.atLineStart) this.emit("\n");
    this.emit(`${text}\n`);
  }

  /** A sentence of the renderer's own, wrapped at spaces to the width, `rest` before each line after the first. */
  private prose(text: string, colour: (t: string) => string, rest = ""): void {
    for (const l of wrapWords(text, this.o.width, "", rest)) this.line(colour(l));
  }

  private endReasoning(): void {
    if (!this.inReasoning) return;
    this.inReasoning = false;
    const s = this.o.style;
    this.reasoningText = "";
    if (this.showReasoning) this.line("");
    else
      this.prose(
        `(thought for ${this.reasoningDeltas} tokens; ${this.o.reasoningKey ? `${this.o.reasoningKey} or ` : ""}--reasoning shows it)`,
        s.dim,
      );
  }

  /** The answer's text: rendered as Markdown on a terminal, else written as the model wrote it. */
  private content(text: string): void {
    if (!this.answer) {
      this.emit(text);
      return;
    }
    this.o.live?.erase();
    if (!this.atLineStart && !this.answer.midLine) this.emit("\n");
    this.answer.push(text);
    this.atLineStart = !this.answer.midLine;
  }

  /** Whatever of the answer is held (a line being written, a table) is written out before anything else. */
  private endAnswer(): void {
    if (!this.answer) return;
    const mid = this.answer.midLine;
    this.o.live?.erase();
    this.answer.end();
    if (mid) this.atLineStart = true;
  }

  /** Before a write of someone else's (a notice on stderr): the status line erased, a line being redrawn let go. */
  pause(): void {
    this.o.live?.erase();
    if (!this.answer?.midLine) return;
    this.answer.commit();
    this.atLineStart = true;
  }

  handle(ev: SessionEvent): void {
    this.o.live?.handle(ev);
    this.render(ev);
    // A retry line stays open for its end: the status line waits below nothing.
    this.o.live?.settle(this.atLineStart && !this.retryOpen);
  }

  private render(ev: SessionEvent): void {
    const s = this.o.style;
    const e = ev.event;
    if (e.case !== "progress") this.progress.clear();
    if (e.case !== "content" && e.case !== "progress") this.endAnswer();
    if (this.growing && e.case !== "toolCallProgress") this.endGrowing(e.case === "toolCall");
    if (this.retryOpen && !(e.case === "retry" && e.value.phase === "resent")) {
      // Whatever comes instead of the answer (another break, the turn's end) starts its own line.
      this.retryOpen = false;
      this.emit("\n");
    }
    switch (e.case) {
      case "turnStarted":
        this.slot = e.value.slot;
        break;
      case "waiting":
        for (const l of wrapWords(
          `waiting for slot ${e.value.slot}: ${e.value.position} ahead (held by ${e.value.heldBySession})`,
          this.o.width,
        )) {
          this.o.live?.erase();
          writeText(this.o.err, `${s.yellow(l)}\n`);
        }
        break;
      case "progress":
        // The status line shows the prefill on a terminal; the bar is for a terminal on stderr only.
        if (!this.o.live) this.progress.update(e.value.processed, e.value.total, e.value.cache);
        break;
      case "reasoning":
        if (!this.inReasoning) {
          this.inReasoning = true;
          this.reasoningDeltas = 0;
          if (this.showReasoning) this.line(s.dim("thinking:"));
        }
        // The server streams one token per delta, so deltas count tokens.
        this.reasoningDeltas++;
        if (this.o.reasoningKey) this.reasoningText += e.value.text;
        if (this.showReasoning) this.emit(s.dim(e.value.text));
        break;
      case "content":
        this.endReasoning();
        this.content(e.value.text);
        break;
      case "thinkingCap":
        this.endReasoning();
        this.prose(thinkingCapText(e.value.reasoningTokens, e.value.accepted, e.value.message), s.yellow);
        break;
      case "toolCallProgress":
        this.endReasoning();
        this.showGrowing(e.value.name, Number(e.value.argumentBytes));
        break;
      case "toolCall":
        this.endReasoning();
        if (e.value.name === LOOP_TOOL.updatePlan) {
          this.planCalls.add(e.value.callId);
          break;
        }
        this.line(callLine(e.value.name, e.value.arguments, s, this.o.width));
        break;
      case "toolDecision":
        if (this.planCalls.has(e.value.callId)) {
          if (e.value.decision === ToolDecision.ALLOWED) break;
          this.line(s.cyan(`┌ ${s.bold(LOOP_TOOL.updatePlan)}`));
          this.planCalls.delete(e.value.callId);
        }
        for (const l of decisionLines(s, e.value.decision, e.value.rule, e.value.proposalId, this.o.width))
          this.line(l);
        break;
      case "plan":
        for (const l of planLines(e.value.items, s)) this.line(l);
        break;
      case "toolResult": {
        if (this.planCalls.delete(e.value.callId) && !e.value.isError) break;
        const lines = e.value.content.replace(/\n+$/, "").split("\n");
        const max = this.o.resultLines ?? 4;
        for (const l of resultLines(e.value.content, max, s, this.o.width)) this.line(l);
        const more = lines.length > max ? ` (+${lines.length - max} lines)` : "";
        this.line(s.cyan("└ ") + (e.value.isError ? s.red(`error${more}`) : s.dim(`ok${more}`)));
        break;
      }
      case "inputSpilled":
        this.prose(inputSpilledText(e.value), s.dim);
        break;
      case "compacted":
        this.endReasoning();
        this.prose(compactionText(e.value), s.dim);
        break;
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
        this.prose(`budget ${e.value.budget} reached: ${e.value.used} of ${e.value.limit}`, s.red);
        break;
      case "turnDone": {
        this.endReasoning();
        // Cancelled by no one here (loopd stopping): the person is told why, not left to think it was their Ctrl-C.
        if (e.value.cancelReason) this.prose(`turn cancelled: ${e.value.cancelReason}`, s.yellow, "  ");
        this.prose(`— ${turnSummaryText(e.value, this.slot)}`, s.dim, "  ");
        break;
      }
      case "cacheWarning":
        this.endReasoning();
        this.prose(`warning: ${e.value.message}`, s.yellow, "  ");
        break;
      case "turnFailed":
        this.endReasoning();
        this.prose(`turn failed: ${e.value.code}: ${e.value.message}`, s.red, "  ");
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
    // The status line says it there (the same words), so the call's line is not drawn twice.
    if (this.o.live || !(this.o.out as NodeJS.WriteStream).isTTY) return;
    if (this.growing) eraseLine(this.o.out);
    else if (!this.atLineStart) this.emit("\n");
    this.growing = { name, bytes };
    const s = this.o.style;
    // Redrawn with \r: a line the terminal wrapped could not be, so it stays inside the width.
    const text = `┌ ${name} writing… ${sizeText(bytes)}`;
    if (this.o.width !== undefined && text.length >= this.o.width) this.emit(s.cyan(cut(text, this.o.width - 1)));
    else this.emit(s.cyan(`┌ ${s.bold(name)} `) + s.dim(`writing… ${sizeText(bytes)}`));
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
    this.endAnswer();
    this.o.live?.stop();
    this.progress.clear();
    if (this.growing) this.endGrowing(false);
    if (!this.atLineStart) this.emit("\n");
  }
}
