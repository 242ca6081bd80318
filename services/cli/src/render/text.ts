import { columns, cut, wrapWords } from "./columns.js";

/** One line, at most `max` characters: for arguments and results inside a frame. */
export function truncate(text: string, max: number): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** "3m ago", "2h ago", or the date: short enough for a table column. */
export function ago(unixMs: number | bigint, now = Date.now()): string {
  const ms = Number(unixMs);
  if (!ms) return "-";
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return new Date(ms).toISOString().slice(0, 10);
}

export interface TableFit {
  /** The terminal's columns; undefined (a pipe, a file) leaves every row whole. */
  width?: number;
  /** Columns given up, in this order, while the table is too wide (a narrow terminal). */
  drop?: readonly number[];
  /** The column that gives way (default the last): its cells wrap at spaces, or with `cutFlex` are cut with "…". */
  flex?: number;
  cutFlex?: boolean;
}

const GAP = "  ";

/**
 * Left-aligned columns; widths come from the widest cell so ids line up.
 * Given a width, the table fits it: the `drop` columns go first, then the
 * flex column shrinks to what is left, wrapping (or cutting) its cells, and a
 * row that still does not fit is cut with "…". A word is never split.
 */
export function table(rows: string[][], fit: TableFit = {}): string {
  const w = fit.width;
  let keep = rows[0]?.map((_, i) => i) ?? [];
  const natural = (cols: number[]) => cols.map((i) => Math.max(0, ...rows.map((r) => columns(r[i] ?? ""))));
  const total = (cols: number[]) => natural(cols).reduce((a, b) => a + b, 0) + GAP.length * (cols.length - 1);
  if (w !== undefined) {
    for (const d of fit.drop ?? []) {
      if (total(keep) <= w) break;
      keep = keep.filter((i) => i !== d);
    }
  }
  const picked = rows.map((r) => keep.map((i) => r[i] ?? ""));
  const widths = natural(keep);
  const flex = Math.max(0, keep.indexOf(fit.flex ?? keep.at(-1) ?? 0));
  let room: number | undefined;
  if (w !== undefined && total(keep) > w) {
    const others = widths.reduce((a, b, i) => (i === flex ? a : a + b), 0) + GAP.length * (keep.length - 1);
    room = Math.max(8, w - others);
    widths[flex] = Math.min(widths[flex] ?? 0, room);
  }
  const lines: string[] = [];
  for (const r of picked) {
    const flexCell = r[flex] ?? "";
    const flexRows =
      room === undefined || columns(flexCell) <= room
        ? [flexCell]
        : fit.cutFlex
          ? [cut(flexCell, room)]
          : wrapWords(flexCell, room);
    flexRows.forEach((fc, k) => {
      const cells = r.map((c, i) => (i === flex ? fc : k === 0 ? c : ""));
      const line = cells
        .map((c, i) => (i === cells.length - 1 ? c : c + " ".repeat(Math.max(0, (widths[i] ?? 0) - columns(c)))))
        .join(GAP)
        .trimEnd();
      lines.push(w !== undefined && columns(line) > w ? cut(line, w) : line);
    });
  }
  return lines.join("\n");
}
