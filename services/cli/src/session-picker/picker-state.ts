// The session picker's logic without a terminal: which sessions a typed
// filter leaves, which row is chosen, what a key does, and the lines drawn.
import type { Style } from "../render/style.js";
import { cut } from "../render/columns.js";
import { ago } from "../render/text.js";

/** What the picker shows of a session. */
export interface PickerRow {
  id: string;
  title: string;
  messages: number;
  updatedUnixMs: number;
  mode: string;
}

export interface PickerState {
  readonly rows: readonly PickerRow[];
  readonly filter: string;
  /** Index into the filtered rows. */
  readonly index: number;
}

/** A key as readline's keypress event gives it. */
export interface PickerKey {
  name?: string;
  sequence?: string;
  ctrl?: boolean;
  meta?: boolean;
}

export type PickerStep = { state: PickerState } | { picked: string } | { cancelled: true };

/** The rows a filter leaves: every word of it in the title or the id, case aside. */
export function filtered(s: PickerState): readonly PickerRow[] {
  const words = s.filter.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return s.rows;
  return s.rows.filter((r) => {
    const hay = `${r.title} ${r.id}`.toLowerCase();
    return words.every((w) => hay.includes(w));
  });
}

const clamp = (i: number, n: number) => Math.max(0, Math.min(i, n - 1));

export function pickerKey(s: PickerState, key: PickerKey): PickerStep {
  const shown = filtered(s);
  if (key.ctrl && key.name === "c") return { cancelled: true };
  switch (key.name) {
    case "escape":
      return { cancelled: true };
    case "return":
    case "enter": {
      const row = shown[s.index];
      return row ? { picked: row.id } : { state: s };
    }
    case "up":
      return { state: { ...s, index: clamp(s.index - 1, shown.length) } };
    case "down":
      return { state: { ...s, index: clamp(s.index + 1, shown.length) } };
    case "pageup":
      return { state: { ...s, index: clamp(s.index - 10, shown.length) } };
    case "pagedown":
      return { state: { ...s, index: clamp(s.index + 10, shown.length) } };
    case "backspace":
      return { state: { ...s, filter: s.filter.slice(0, -1), index: 0 } };
  }
  if (key.ctrl && key.name === "p") return { state: { ...s, index: clamp(s.index - 1, shown.length) } };
  if (key.ctrl && key.name === "n") return { state: { ...s, index: clamp(s.index + 1, shown.length) } };
  if (key.ctrl && key.name === "u") return { state: { ...s, filter: "", index: 0 } };
  const ch = key.sequence ?? "";
  // Printable text narrows the list; anything else (a function key, a control) is ignored.
  if (!key.ctrl && !key.meta && ch.length > 0 && !/[\p{Cc}]/u.test(ch)) {
    return { state: { ...s, filter: s.filter + ch, index: 0 } };
  }
  return { state: s };
}

/**
 * The picker as drawn: a header with the filter, up to `height` rows around
 * the chosen one, and a line of keys. Every line fits `width`.
 */
export function pickerLines(s: PickerState, st: Style, width: number, height: number, now = Date.now()): string[] {
  const shown = filtered(s);
  const head = `${st.bold("resume which session?")} ${st.dim(`(${shown.length} of ${s.rows.length})`)} › ${s.filter}`;
  const lines = [cut(head, width)];
  const room = Math.max(1, height);
  const start = Math.max(0, Math.min(s.index - Math.floor(room / 2), shown.length - room));
  for (const [i, r] of shown.slice(start, start + room).entries()) {
    const chosen = start + i === s.index;
    const facts = ` · ${r.messages} msg · ${ago(r.updatedUnixMs, now)} · ${r.mode || "ask"} · ${r.id}`;
    const title = r.title || "(untitled)";
    // The title gives way first: the id and the age are what tell two "fix the tests" apart.
    const titleRoom = Math.max(8, width - 2 - facts.length);
    const line = `${chosen ? "▸ " : "  "}${cut(title, titleRoom)}${st.dim(facts)}`;
    lines.push(cut(chosen ? st.bold(line) : line, width));
  }
  if (shown.length === 0) lines.push(st.dim("  no session matches; Backspace widens the search"));
  lines.push(cut(st.dim("↑/↓ choose · type to search · Enter resumes · Esc cancels"), width));
  return lines;
}
