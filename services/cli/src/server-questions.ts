import {
  ElicitationAction,
  ElicitationMode,
  messageOf,
  type Elicitation,
  type SessionEvent,
} from "@boxmaker/common/client";
import { formFields, parseFieldInput, type FormField } from "@boxmaker/common/lite";
import type { LoopClient } from "./connection.js";
import { readKey } from "./key-choice.js";
import { wrapWords, widthOf } from "./render/columns.js";
import { answerLines, fieldLines, questionFrame } from "./render/server-question.js";
import type { Style } from "./render/style.js";
import { writeText } from "./render/terminal-safe.js";
import { readLine } from "./terminal-line.js";

/**
 * The questions MCP servers ask the person during the turn's tool calls
 * (elicitation), asked on the terminal running the turn: a form field by
 * field, or a page to open. Ctrl-C at a question dismisses it (the server is
 * told cancel) and the turn goes on. Without a terminal to ask on (a pipe,
 * --json) each question is answered cancel at once, so a turn never waits
 * for a person who is not there. The answers go to the server through loopd
 * and brokerd and never into the model's prompt.
 */
export class ServerQuestions {
  private readonly open = new Map<string, AbortController>();
  private queue: Promise<void> = Promise.resolve();
  private prompting = false;

  constructor(
    private readonly client: Pick<LoopClient, "answerElicitation">,
    private readonly style: Style,
    private readonly err: NodeJS.WritableStream,
    private readonly input: NodeJS.ReadStream,
    /** A person can answer here (a terminal, not --json). */
    private readonly interactive: boolean,
    /** Before a question is written: the turn's output ends its line and the status line goes. */
    private readonly beforeAsk: () => void = () => {},
  ) {}

  /** A question is being read from the terminal: its keys are the question's. */
  get questionOpen(): boolean {
    return this.prompting;
  }

  handle(ev: SessionEvent): void {
    if (ev.event.case !== "elicitation") return;
    const e = ev.event.value.event;
    if (e.case === "asked") {
      const q = e.value;
      if (this.open.has(q.id)) return;
      const ac = new AbortController();
      this.open.set(q.id, ac);
      this.queue = this.queue.then(() => this.ask(q, ac.signal)).finally(() => this.open.delete(q.id));
    } else if (e.case === "ended") {
      const ac = this.open.get(e.value.id);
      if (!ac) return;
      this.open.delete(e.value.id);
      if (this.prompting) {
        writeText(this.err, "\n");
        this.note(`(the question ended: ${e.value.why})`);
      }
      ac.abort();
    }
  }

  /** Waits for the questions being asked (the turn is over: nothing else will withdraw them). */
  async settled(): Promise<void> {
    await this.queue;
  }

  dispose(): void {
    for (const ac of this.open.values()) ac.abort();
  }

  private get width(): number | undefined {
    return widthOf(this.err);
  }

  private note(text: string): void {
    for (const l of wrapWords(text, this.width)) writeText(this.err, `${this.style.dim(l)}\n`);
  }

  private async ask(q: Elicitation, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    this.beforeAsk();
    writeText(this.err, questionFrame(q, this.style, this.width));
    if (!this.interactive) {
      this.note("(no terminal here to answer on: the server was told the question was dismissed)");
      return this.answer(q, ElicitationAction.CANCEL);
    }
    if (q.mode === ElicitationMode.URL) {
      const prompt = q.beforeRetry
        ? `${this.style.bold("done there?")} [y]es, send the call again · [n]o, decline · [c]ancel `
        : `${this.style.bold("open it?")} [y]es, I will · [n]o, decline · [c]ancel `;
      return this.answer(q, await this.choose(prompt, signal));
    }
    const form = formFields(safeJson(q.requestedSchemaJson));
    if ("error" in form) {
      this.note(`(the server's form cannot be asked here: ${form.error}; it was declined)`);
      return this.answer(q, ElicitationAction.DECLINE);
    }
    const content = await this.fill(form.fields, signal);
    if (content === undefined) return this.answer(q, signal.aborted ? undefined : ElicitationAction.CANCEL);
    for (const l of answerLines(form.fields, content, this.style, this.width)) writeText(this.err, `${l}\n`);
    const action = await this.choose(`${this.style.bold("send?")} [y]es · [n]o, decline · [c]ancel `, signal);
    return this.answer(q, action, action === ElicitationAction.ACCEPT ? content : undefined);
  }

  /** Each field in turn until it parses; undefined when dismissed (Ctrl-C, Ctrl-D, withdrawn). */
  private async fill(fields: FormField[], signal: AbortSignal): Promise<Record<string, unknown> | undefined> {
    const content: Record<string, unknown> = {};
    for (const f of fields) {
      for (const l of fieldLines(f, this.style, this.width)) writeText(this.err, `${l}\n`);
      for (;;) {
        this.prompting = true;
        const line = await readLine(this.input, this.err, "  › ", signal).finally(() => (this.prompting = false));
        if (line === undefined) return undefined;
        const r = parseFieldInput(f, line);
        if ("error" in r) {
          writeText(this.err, `${this.style.yellow(`    ${r.error}`)}\n`);
          continue;
        }
        if ("value" in r) content[f.key] = r.value;
        break;
      }
    }
    return content;
  }

  /** One key: y accepts, n declines, c (or Ctrl-C, Ctrl-D) dismisses; undefined when withdrawn. */
  private async choose(prompt: string, signal: AbortSignal): Promise<ElicitationAction | undefined> {
    const lines = wrapWords(prompt, this.width === undefined ? undefined : this.width - 1);
    writeText(this.err, `${lines.join("\n").trimEnd()} `);
    this.prompting = true;
    const a = await readKey(this.input, "ync", signal).finally(() => (this.prompting = false));
    if (signal.aborted) return undefined;
    const key = a && "key" in a ? a.key : "c";
    writeText(this.err, `${this.style.dim({ y: "yes", n: "no, decline", c: "cancel" }[key] ?? "")}\n`);
    return key === "y" ? ElicitationAction.ACCEPT : key === "n" ? ElicitationAction.DECLINE : ElicitationAction.CANCEL;
  }

  private async answer(
    q: Elicitation,
    action: ElicitationAction | undefined,
    content?: Record<string, unknown>,
  ): Promise<void> {
    if (action === undefined) return;
    try {
      await this.client.answerElicitation({
        sessionId: q.sessionId,
        id: q.id,
        action,
        contentJson: content ? JSON.stringify(content) : "",
      });
    } catch (err) {
      this.note(`(the answer did not reach the server: ${messageOf(err)})`);
    }
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
