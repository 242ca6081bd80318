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

/** Left-aligned columns; widths come from the widest cell so ids line up. */
export function table(rows: string[][], visibleLength: (s: string) => number = (s) => s.length): string {
  const widths: number[] = [];
  for (const r of rows) {
    for (const [i, c] of r.entries()) widths[i] = Math.max(widths[i] ?? 0, visibleLength(c));
  }
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c + " ".repeat((widths[i] ?? 0) - visibleLength(c))))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

export { visibleLength } from "./terminal-safe.js";
