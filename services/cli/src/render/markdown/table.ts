// A Markdown (GFM) table laid out for the terminal: columns as wide as their
// widest cell, shrunk and wrapped at word boundaries when the whole would
// pass the width, and, when not even that fits, one "header: value" line per
// cell, so no width loses a cell.
import type { Style } from "../style.js";
import { columns, wrapWords } from "../columns.js";
import { renderInline } from "./inline.js";

type Align = "left" | "right" | "center";

/** The narrowest a column is squeezed to before the table is given as a list instead. */
const MIN_COLUMN = 6;
const GAP = " │ ";

/** A row's cells: split at `|` outside code spans and escapes, the outer pipes dropped. */
export function tableCells(line: string): string[] {
  const cells: string[] = [];
  let cell = "";
  let inCode = false;
  const t = line.trim();
  for (let i = 0; i < t.length; i++) {
    const c = t[i]!;
    if (c === "\\" && t[i + 1] === "|") {
      cell += "|";
      i++;
    } else if (c === "`") {
      inCode = !inCode;
      cell += c;
    } else if (c === "|" && !inCode) {
      cells.push(cell);
      cell = "";
    } else cell += c;
  }
  cells.push(cell);
  if (t.startsWith("|")) cells.shift();
  if (t.endsWith("|") && !t.endsWith("\\|") && cells.length > 0) cells.pop();
  return cells.map((c) => c.trim());
}

/** The alignment row (`|---|:--:|`) under a header, or undefined when the line is not one. */
export function alignments(line: string): Align[] | undefined {
  if (!line.includes("-")) return undefined;
  const cells = tableCells(line);
  if (cells.length === 0 || !cells.every((c) => /^:?-+:?$/.test(c))) return undefined;
  return cells.map((c) => (c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : "left"));
}

function pad(text: string, width: number, align: Align): string {
  const room = Math.max(0, width - columns(text));
  if (align === "right") return " ".repeat(room) + text;
  if (align === "center") return " ".repeat(Math.floor(room / 2)) + text + " ".repeat(Math.ceil(room / 2));
  return text + " ".repeat(room);
}

/** Column widths that fit `width` in total, narrowing the widest first; undefined when they cannot. */
function fitWidths(natural: number[], width: number | undefined): number[] | undefined {
  const w = [...natural];
  if (width === undefined) return w;
  const room = width - GAP.length * (w.length - 1);
  let total = w.reduce((a, b) => a + b, 0);
  while (total > room) {
    const widest = w.indexOf(Math.max(...w));
    if (w[widest]! <= MIN_COLUMN) return undefined;
    w[widest]!--;
    total--;
  }
  return w;
}

/** The table's lines: `header` and `body` are raw rows, `align` the alignment row's. */
export function renderTable(
  header: string[],
  align: Align[],
  body: string[][],
  s: Style,
  width: number | undefined,
): string[] {
  const n = Math.max(header.length, align.length, ...body.map((r) => r.length));
  const cell = (row: string[], i: number) => renderInline(row[i] ?? "", s);
  const head = Array.from({ length: n }, (_, i) => cell(header, i));
  const rows = body.map((r) => Array.from({ length: n }, (_, i) => cell(r, i)));
  const natural = Array.from({ length: n }, (_, i) =>
    Math.max(1, columns(head[i]!), ...rows.map((r) => columns(r[i]!))),
  );
  const widths = fitWidths(natural, width);
  if (!widths) return asList(head, rows, s, width);
  const out: string[] = [];
  const emit = (cells: string[], style: (t: string) => string) => {
    const wrapped = cells.map((c, i) => wrapWords(c, widths[i]));
    const height = Math.max(...wrapped.map((w) => w.length));
    for (let k = 0; k < height; k++)
      out.push(
        wrapped
          .map((w, i) => pad(style(w[k] ?? ""), widths[i]!, align[i] ?? "left"))
          .join(s.dim(GAP))
          .trimEnd(),
      );
  };
  emit(head, s.bold);
  out.push(s.dim(widths.map((w) => "─".repeat(w)).join("─┼─")));
  for (const r of rows) emit(r, (t) => t);
  return out;
}

/** A table too wide for the terminal: each row a block of "header: value" lines. */
function asList(head: string[], rows: string[][], s: Style, width: number | undefined): string[] {
  const out: string[] = [];
  rows.forEach((r, k) => {
    if (k > 0) out.push("");
    r.forEach((c, i) => {
      out.push(...wrapWords(`${s.bold(`${head[i] || `column ${i + 1}`}:`)} ${c}`, width, "", "  "));
    });
  });
  return out;
}
