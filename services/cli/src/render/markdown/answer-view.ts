// The model's answer on a terminal, rendered as Markdown while it streams.
// A complete line is written once, for good. The line still being written
// is drawn as it stands and redrawn in place as it grows (its rows erased
// with the CLI's own erase sequences), so the person reads the answer as it
// comes, formatted, with nothing left behind from an earlier draw.
import type { Style } from "../style.js";
import { eraseRows, writeText } from "../terminal-safe.js";
import { MarkdownBlocks } from "./blocks.js";
import { columns } from "../columns.js";

export class AnswerView {
  private blocks: MarkdownBlocks;
  private pending = "";
  /** The partial line as last drawn, and the rows each of its lines took on the terminal. */
  private drawn: string[] = [];
  private rows: number[] = [];

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly s: Style,
    private readonly width: number | undefined,
  ) {
    this.blocks = new MarkdownBlocks(s, width);
  }

  /** Whether the cursor sits after a drawn partial line rather than at a line's start. */
  get midLine(): boolean {
    return this.drawn.length > 0;
  }

  push(text: string): void {
    this.pending += text;
    const nl = this.pending.lastIndexOf("\n");
    if (nl >= 0) {
      const complete = this.pending.slice(0, nl).split("\n");
      this.pending = this.pending.slice(nl + 1);
      this.undraw();
      const lines = complete.flatMap((l) => this.blocks.line(l.replace(/\r$/, "")));
      if (lines.length) writeText(this.out, `${lines.join("\n")}\n`);
    }
    this.draw();
  }

  /** The answer is over (or something else is about to be written): everything held is written, ending its line. */
  end(): void {
    const rest = this.pending;
    this.pending = "";
    this.undraw();
    const lines = [...(rest ? this.blocks.line(rest) : []), ...this.blocks.end()];
    if (lines.length) writeText(this.out, `${lines.join("\n")}\n`);
    this.blocks = new MarkdownBlocks(this.s, this.width);
  }

  /**
   * Something else must be written now (a Ctrl-C notice): the line being
   * written is finished where it stands, and what the model writes next
   * starts a new line below that write. A redraw from a cursor another
   * write moved would erase the wrong rows.
   */
  commit(): void {
    if (this.drawn.length === 0) return;
    const rest = this.pending;
    this.pending = "";
    this.undraw();
    const lines = this.blocks.line(rest);
    writeText(this.out, `${lines.join("\n")}\n`);
  }

  private draw(): void {
    // Without a width the rows a draw takes are unknown, so nothing is drawn that would need erasing.
    const width = this.width;
    const lines = width === undefined ? [] : this.blocks.preview(this.pending);
    if (width === undefined || lines.length === 0) {
      this.undraw();
      return;
    }
    // Only the rows that changed are redrawn: most deltas touch the last row alone.
    let same = 0;
    while (same < lines.length && same < this.drawn.length - 1 && lines[same] === this.drawn[same]) same++;
    this.undraw(same);
    const fresh = lines.slice(same);
    writeText(this.out, fresh.join("\n"));
    // A code line wider than the terminal wraps there: each of its rows must be erased too.
    this.rows.push(...fresh.map((l) => Math.max(1, Math.ceil(columns(l) / width))));
    this.drawn = lines;
  }

  /** Erases the drawn lines from `keep` on, leaving the cursor where line `keep` starts. */
  private undraw(keep = 0): void {
    if (this.drawn.length === 0) return;
    eraseRows(
      this.out,
      this.rows.slice(keep).reduce((a, b) => a + b, 0),
    );
    this.rows = this.rows.slice(0, keep);
    this.drawn = this.drawn.slice(0, keep);
  }
}
