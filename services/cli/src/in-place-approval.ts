import { createInterface } from "node:readline/promises";
import { messageOf, ToolDecision, type Proposal, type SessionEvent } from "@boxmaker/common/client";
import type { LoopClient } from "./connection.js";
import { renderProposal, stateText } from "./render/proposal.js";
import type { Style } from "./render/style.js";
import { terminalText, writeText } from "./render/terminal-safe.js";
import { activeDiff } from "./render/active-lines.js";
import { widthOf, wrapWords } from "./render/columns.js";
import { readKey } from "./key-choice.js";

/** Diff lines shown before the question; `d` shows the whole proposal. */
const PREVIEW_LINES = 20;

/**
 * Asks, in the terminal running the turn, about each call the turn stages:
 * approve, reject with a reason, show the full diff, or leave it for later.
 * `boxmaker approve`/`reject` from elsewhere still work: whoever decides
 * first wins, and a question whose proposal was decided (or whose wait ran
 * out) is withdrawn when the turn's tool result arrives.
 */
export class InPlaceApprovals {
  private readonly open = new Map<string, AbortController>();
  private readonly asking: Promise<void>[] = [];
  /** A question is on the screen, its line not ended yet. */
  private prompting = false;
  /** Proposals a call staged on its way while it ran (a network host): asked about once the turn is over. */
  private readonly afterTurn: string[] = [];
  /** Ctrl-C at a question cancelled the turn. */
  private turnCancelled = false;

  constructor(
    private readonly client: LoopClient,
    private readonly style: Style,
    private readonly err: NodeJS.WritableStream = process.stderr,
    private readonly input: NodeJS.ReadableStream = process.stdin,
    /** The bell and desktop notification for a question that waits (approval-alert.ts). */
    private readonly alert: (p: Proposal) => void = () => {},
    /** Ctrl-C at a question during the turn (the terminal's readline takes it from the process). */
    private readonly onCtrlC: () => void = () => {},
    /** What another terminal puts before `boxmaker` to reach this stack (socket-choice.ts reachPrefix). */
    private readonly reach = "",
  ) {}

  /** A question is being read from the terminal: its keys are the question's. */
  get questionOpen(): boolean {
    return this.prompting;
  }

  handle(ev: SessionEvent): void {
    const e = ev.event;
    if (e.case === "toolDecision" && e.value.decision === ToolDecision.STAGED && e.value.proposalId) {
      this.asking.push(this.ask(e.value.proposalId));
    } else if (e.case === "toolDecision" && e.value.decision === ToolDecision.ALLOWED && e.value.proposalId) {
      // The call ran and the turn goes on: a question now would be written over the model's output.
      this.afterTurn.push(e.value.proposalId);
    } else if (e.case === "toolResult" && e.value.proposalId) {
      const ac = this.open.get(e.value.proposalId);
      if (!ac && e.value.proposalState === "withdrawn") {
        this.note(`(the turn was cancelled: proposal ${e.value.proposalId} is withdrawn, nothing was applied)`);
      } else if (ac) {
        if (this.prompting) writeText(this.err, "\n");
        this.prompting = false;
        ac.abort();
        const st = e.value.proposalState;
        this.note(
          st === "pending"
            ? `(no decision in time; the model was told it is pending — \`boxmaker approve ${e.value.proposalId}\` later)`
            : st === "withdrawn"
              ? `(the turn was cancelled: proposal ${e.value.proposalId} is withdrawn, nothing was applied)`
              : `(decided elsewhere: ${st})`,
        );
      }
    }
  }

  /** The proposals the turn's calls staged while running, one question each; the model re-runs once told. */
  async askAfterTurn(): Promise<void> {
    for (const id of this.afterTurn.splice(0)) await this.ask(id, true);
  }

  dispose(): void {
    for (const ac of this.open.values()) ac.abort();
  }

  private note(text: string): void {
    for (const l of wrapWords(text, this.width)) writeText(this.err, `${this.style.dim(l)}\n`);
  }

  /** The terminal's columns, read when writing: a window resized between questions is fitted. */
  private get width(): number | undefined {
    return widthOf(this.err);
  }

  /** `afterTurn`: no tool result follows to show the decision, so it is said here. */
  private async ask(id: string, afterTurn = false): Promise<void> {
    const ac = new AbortController();
    this.open.set(id, ac);
    try {
      const p = await this.proposal(id);
      // Decided from elsewhere while the turn ran: nothing to ask.
      if (p?.state !== "pending" || ac.signal.aborted) return;
      writeText(this.err, preview(p, this.style, PREVIEW_LINES, this.width));
      this.alert(p);
      for (;;) {
        const a = await this.choose(
          afterTurn
            ? `${this.style.bold("approve?")} [y]es · [n]o, reject · [d]iff in full · [l]ater `
            : `${this.style.bold("approve?")} [y]es · [n]o, reject · [d]iff in full · [l]ater · Ctrl-C cancels the turn `,
          ac.signal,
          !afterTurn,
        );
        if (a === undefined || a === "l") {
          // After Ctrl-C the turn is being cancelled: its tool result says the proposal was withdrawn.
          if (!ac.signal.aborted && !this.turnCancelled)
            this.note(
              `left pending; \`${this.reach}boxmaker approve ${id}\` or \`${this.reach}boxmaker reject ${id}\` from any terminal`,
            );
          return;
        }
        if (a === "d") {
          writeText(this.err, renderProposal(p, this.style, this.width));
          continue;
        }
        if (a === "y") return void (await this.decide(id, true, "", ac.signal, afterTurn));
        const reason = await this.question("reason for the model (optional, Enter for none): ", ac.signal, !afterTurn);
        if (reason === undefined) return;
        return void (await this.decide(id, false, reason.trim(), ac.signal, afterTurn));
      }
    } finally {
      this.open.delete(id);
    }
  }

  private async proposal(id: string): Promise<Proposal | undefined> {
    try {
      const { proposals } = await this.client.listProposals({ includeDecided: true });
      return proposals.find((p) => p.id === id);
    } catch (err) {
      this.note(`cannot show proposal ${id}: ${messageOf(err)}`);
      return undefined;
    }
  }

  private async decide(
    id: string,
    approve: boolean,
    reason: string,
    signal: AbortSignal,
    afterTurn: boolean,
  ): Promise<void> {
    if (signal.aborted) return;
    // Answered here: the tool result that follows is this decision, not someone else's.
    this.open.delete(id);
    try {
      const { proposal } = await this.client.decideProposal({ id, approve, reason });
      if (afterTurn && proposal)
        writeText(
          this.err,
          `${stateText(proposal.state, this.style)}${proposal.result ? `: ${proposal.result}` : ""}\n`,
        );
    } catch (err) {
      // Someone else was quicker: their decision stands.
      this.note(`not ${approve ? "approved" : "rejected"} here: ${messageOf(err)}`);
    }
  }

  /** Writes a question wrapped to the width; its last line is returned, to be written (or prompted) without a newline. */
  private lastLineOf(q: string): string {
    // On a narrow terminal the choices wrap at spaces.
    const lines = wrapWords(q, this.width === undefined ? undefined : this.width - 1);
    if (lines.length > 1) writeText(this.err, `${lines.slice(0, -1).join("\n")}\n`);
    return `${(lines.at(-1) ?? "").trimEnd()} `;
  }

  /**
   * One key of y/n/d/l, no Enter (key-choice.ts); undefined on Ctrl-C,
   * Ctrl-D or when withdrawn. `duringTurn`: Ctrl-C also cancels the turn.
   */
  private async choose(q: string, signal: AbortSignal, duringTurn: boolean): Promise<string | undefined> {
    if (signal.aborted) return undefined;
    writeText(this.err, this.lastLineOf(q));
    const input = this.input as NodeJS.ReadStream;
    if (!input.isTTY) return this.question("", signal, duringTurn).then((a) => a?.trim().toLowerCase()[0]);
    this.prompting = true;
    try {
      const a = await readKey(input, "yndl", signal);
      // Withdrawn (decided elsewhere): handle() has ended the line already.
      if (signal.aborted) return undefined;
      this.prompting = false;
      if (a && "ctrlC" in a) {
        writeText(this.err, "\n");
        if (duringTurn) {
          this.turnCancelled = true;
          this.onCtrlC();
        }
        return undefined;
      }
      const said = a ? { y: "yes", n: "no, reject", d: "diff", l: "later" }[a.key] : "later";
      writeText(this.err, `${this.style.dim(said ?? "")}\n`);
      return a?.key;
    } finally {
      this.prompting = false;
    }
  }

  /**
   * One line from the terminal; undefined on Ctrl-C, Ctrl-D or when withdrawn.
   * `duringTurn`: Ctrl-C also cancels the turn, as it does while the answer streams —
   * left as "later", the turn would wait on with nobody asked (approval_wait_ms, 10 minutes).
   */
  private async question(q: string, signal: AbortSignal, duringTurn = false): Promise<string | undefined> {
    if (signal.aborted) return undefined;
    // Readline is given the last line only: it redraws that one.
    const last = q ? this.lastLineOf(q) : "";
    const rl = createInterface({ input: this.input, output: this.err, terminal: true });
    this.prompting = true;
    try {
      return await new Promise<string | undefined>((resolve) => {
        rl.once("SIGINT", () => {
          this.prompting = false;
          writeText(this.err, "\n");
          if (duringTurn) {
            this.turnCancelled = true;
            this.onCtrlC();
          }
          resolve(undefined);
        });
        rl.once("close", () => resolve(undefined));
        // Withdrawn (decided elsewhere): handle() has ended the line already.
        rl.question(terminalText(last), { signal }).then(resolve, () => resolve(undefined));
      });
    } finally {
      this.prompting = false;
      rl.close();
    }
  }
}

/**
 * The proposal's head and the first lines of its diff or command. A reviewed
 * write (rule `protected:…`: it can run or steer a later program) is never cut:
 * past its first lines every line that can run is shown too (render/active-lines.ts).
 */
export function preview(p: Proposal, s: Style, maxLines: number, width?: number): string {
  if (p.rule.startsWith("protected:") && p.preview.includes("\n+")) {
    const active = activeDiff(p.preview, maxLines);
    const shown = renderProposal({ ...p, preview: active.diff }, s, width);
    if (active.omitted === 0) return shown;
    const note = `… every line that can run is above; d shows all ${active.omitted} left out too`;
    return `${shown}${wrapWords(note, width).map(s.dim).join("\n")}\n`;
  }
  const full = renderProposal(p, s, width).replace(/\n$/, "").split("\n");
  // The head (id, where from; wrapped on a narrow terminal) ends at its blank line, then the body.
  const headLen = full.indexOf("") + 1;
  const bodyLen = full.length - headLen;
  if (bodyLen <= maxLines) return `${full.join("\n")}\n`;
  const more = wrapWords(`… ${bodyLen - maxLines} more lines (d shows them all)`, width).map(s.dim);
  return `${[...full.slice(0, headLen + maxLines), ...more].join("\n")}\n`;
}
