// Markdown as it streams, one complete line at a time: which block a line
// opens or continues (heading, list item, quote, rule, fenced code, table,
// paragraph) and the terminal lines it becomes at the width. Pure: the
// caller writes what comes out (answer-view.ts streams it to the terminal).
import type { Style } from "../style.js";
import { columns, faithfulLine, wrapWords } from "../columns.js";
import { CodeHighlighter } from "./code-highlight.js";
import { renderInline } from "./inline.js";
import { carryStyles } from "./style-runs.js";
import { alignments, renderTable, tableCells } from "./table.js";

const FENCE = /^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TASK = /^\[([ xX])\]\s+(.*)$/;
const TABLE_ROW = /^\s*\|/;

export class MarkdownBlocks {
  private fence: { marker: string; indent: number; code: CodeHighlighter } | undefined;
  /** Rows of a table (or of what may be one) waiting for its end: its layout needs every row. */
  private table: string[] = [];

  constructor(
    private readonly s: Style,
    private readonly width: number | undefined,
  ) {}

  /** The terminal lines for one complete source line (none while a table gathers its rows). */
  line(source: string): string[] {
    const out: string[] = [];
    if (!this.fence && this.table.length > 0 && !TABLE_ROW.test(source)) out.push(...this.endTable());
    if (!this.fence && TABLE_ROW.test(source)) {
      this.table.push(source);
      return out;
    }
    out.push(...this.block(source));
    return out;
  }

  /**
   * The lines a line still being written would show as it stands, without
   * taking it: a table row shows nothing until the table is laid out.
   */
  preview(partial: string): string[] {
    if (partial === "") return [];
    if (!this.fence && (this.table.length > 0 || TABLE_ROW.test(partial))) return [];
    if (this.fence) {
      // Highlighting a partial line must not move the block comment state on.
      return [faithfulLine(partial)];
    }
    return this.block(partial, true);
  }

  /** What is still held (a table at the answer's end; a fence never closed needs nothing). */
  end(): string[] {
    const out = this.endTable();
    this.fence = undefined;
    return out;
  }

  private endTable(): string[] {
    const rows = this.table;
    this.table = [];
    if (rows.length === 0) return [];
    const align = rows.length >= 2 ? alignments(rows[1]!) : undefined;
    if (!align) return rows.flatMap((r) => this.block(r));
    return renderTable(
      tableCells(rows[0]!),
      align,
      rows.slice(2).map((r) => tableCells(r)),
      this.s,
      this.width,
    );
  }

  private wrap(text: string, first = "", rest = first): string[] {
    return carryStyles(wrapWords(text, this.width, first, rest));
  }

  private block(source: string, preview = false): string[] {
    const s = this.s;
    if (this.fence) {
      const close = FENCE.exec(source);
      if (
        close &&
        close[2]!.startsWith(this.fence.marker[0]!) &&
        close[2]!.length >= this.fence.marker.length &&
        source.trim() === close[2]
      ) {
        this.fence = undefined;
        return [];
      }
      // The block's own indentation is not the code's.
      const line = source.replace(new RegExp(`^ {0,${this.fence.indent}}`), "");
      return [this.fence.code.line(faithfulLine(line))];
    }
    const fence = FENCE.exec(source);
    if (fence && !(fence[2]!.startsWith("`") && source.slice(fence[0].length).includes("`"))) {
      if (preview) return [s.dim(source.trim())];
      this.fence = { marker: fence[2]!, indent: fence[1]!.length, code: new CodeHighlighter(fence[3] ?? "", s) };
      return fence[3] ? [s.dim(fence[3])] : [];
    }
    if (source.trim() === "") return [""];
    const heading = HEADING.exec(source);
    if (heading) {
      const level = heading[1]!.length;
      const text = renderInline(heading[2] ?? "", s);
      const styled = level <= 2 ? (t: string) => s.bold(s.underline(t)) : s.bold;
      return this.wrap(styled(text));
    }
    if (RULE.test(source)) return [s.dim("─".repeat(Math.min(this.width ?? 40, 80)))];
    const quote = QUOTE.exec(source);
    if (quote) {
      const bar = s.dim("│ ");
      const inner = this.quoted(quote[1]!);
      return inner.map((l) => bar + l);
    }
    const item = ITEM.exec(source);
    if (item) {
      const indent = item[1]!.replace(/\t/g, "    ");
      let bullet = /\d/.test(item[2]!) ? item[2]! : "•";
      let text = item[3]!;
      const task = TASK.exec(text);
      if (task) {
        bullet = task[1] === " " ? "☐" : "☑";
        text = task[2]!;
      }
      const first = `${indent}${s.cyan(bullet)} `;
      return this.wrap(renderInline(text, s), first, " ".repeat(columns(first)));
    }
    // A paragraph keeps its indentation (a list item's continuation, an aside).
    const lead = /^\s*/.exec(source)![0].replace(/\t/g, "    ");
    return this.wrap(renderInline(source.trimStart(), s), lead);
  }

  /** A quote's text, with the width it has inside its bar (a quote may hold a list or a heading). */
  private quoted(text: string): string[] {
    const inner = new MarkdownBlocks(this.s, this.width === undefined ? undefined : Math.max(10, this.width - 2));
    // Whatever the quote holds is shown now: a row alone is not a table.
    return [...inner.line(text), ...inner.end()];
  }
}
