// Fitting text to a terminal's width: how many columns a string takes, cutting at a
// column with an ellipsis, wrapping prose at word boundaries, and showing a line of
// file content as it is (indentation, tabs and repeated spaces kept).
import { styleMark, visible } from "./terminal-safe.js";

/** Columns between tab stops when a tab in file content is shown: spaces up to the next stop, as `bat` does. */
export const TAB_STOP = 4;

/** East Asian wide and fullwidth characters and the emoji blocks: two columns on a terminal. */
function isWide(cp: number): boolean {
  return (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0x303e) ||
    (cp >= 0x3041 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1f64f) ||
    (cp >= 0x1f900 && cp <= 0x1f9ff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  );
}

const ZERO_WIDTH = /^(?:\p{Mn}|\p{Me}|[\u200b-\u200d]|[\ufe00-\ufe0f])$/u;

/** Columns one printable character takes. */
function charColumns(ch: string): number {
  if (ZERO_WIDTH.test(ch)) return 0;
  return isWide(ch.codePointAt(0) ?? 0) ? 2 : 1;
}

/** A colour sequence the CLI composed (style.ts) at the start of `text` from `i`, or 0. */
function markAt(text: string, i: number): number {
  if (text.charCodeAt(i) !== 0xe000) return 0;
  const m = styleMark();
  if (!text.startsWith(m, i)) return 0;
  const end = /^\[[0-9;]*m/.exec(text.slice(i + m.length));
  return end ? m.length + end[0].length : 0;
}

/** Columns the text takes once written: data's control characters as their shown forms, the CLI's colours none. */
export function columns(text: string): number {
  const t = visible(text);
  let n = 0;
  for (let i = 0; i < t.length; ) {
    const mk = markAt(t, i);
    if (mk) {
      i += mk;
      continue;
    }
    const ch = String.fromCodePoint(t.codePointAt(i) ?? 0);
    n += charColumns(ch);
    i += ch.length;
  }
  return n;
}

/**
 * The text in at most `width` columns: whole when it fits, else cut with "…"
 * as its last column. Control characters are made visible first (their shown
 * form is what takes the columns); the CLI's colours are kept and, when the
 * cut falls inside one, closed.
 */
export function cut(text: string, width: number): string {
  const t = visible(text);
  if (columns(t) <= width) return t;
  if (width <= 0) return "";
  let out = "";
  let n = 0;
  let styled = false;
  for (let i = 0; i < t.length; ) {
    const mk = markAt(t, i);
    if (mk) {
      out += t.slice(i, i + mk);
      styled = true;
      i += mk;
      continue;
    }
    const ch = String.fromCodePoint(t.codePointAt(i) ?? 0);
    const w = charColumns(ch);
    if (n + w > width - 1) break;
    out += ch;
    n += w;
    i += ch.length;
  }
  return `${out}…${styled ? `${styleMark()}[0m` : ""}`;
}

/**
 * One line of file content or command output as it is: tabs become spaces to
 * the next stop of TAB_STOP columns (a raw tab would move the cursor past
 * what the width allows), every other control character its shown form,
 * repeated spaces and indentation untouched.
 */
export function faithfulLine(line: string): string {
  if (!line.includes("\t")) return visible(line);
  let out = "";
  let col = 0;
  for (const ch of visible(line)) {
    if (ch === "\t") {
      const pad = TAB_STOP - (col % TAB_STOP);
      out += " ".repeat(pad);
      col += pad;
    } else {
      out += ch;
      col += charColumns(ch);
    }
  }
  return out;
}

/**
 * A tool call's arguments on one line, every value as the model wrote it.
 * Arguments are JSON (or, while they stream, the start of it), where
 * whitespace outside a string is layout: a run of it folds into one space
 * (none beside a bracket), while the strings (an edit's two spaces, its
 * indentation) stay byte for byte. Text that is not JSON keeps its spaces;
 * its line breaks show as ⏎.
 */
export function oneLineArguments(args: string): string {
  if (!/^\s*[[{]/.test(args)) return args.replace(/\r?\n/g, "⏎");
  let out = "";
  let inString = false;
  let escaped = false;
  let gap = false;
  for (const ch of args) {
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === "\\") escaped = true;
      else if (ch === '"') inString = false;
      out += ch;
      continue;
    }
    if (ch === " " || ch === "\t" || ch === "\n" || ch === "\r") {
      gap = true;
      continue;
    }
    if (gap && out !== "" && !"[{".includes(out.at(-1) ?? "") && !"]}".includes(ch)) out += " ";
    gap = false;
    out += ch;
    if (ch === '"') inString = true;
  }
  return out;
}

/**
 * Prose in lines of at most `width` columns, broken at spaces; a word longer
 * than a line is cut with "…" rather than split. `rest` starts every line after
 * the first (a frame's "│ ", a hanging indent) and counts against the width.
 * Without a width (not a terminal) the text stays one line.
 */
export function wrapWords(text: string, width: number | undefined, first = "", rest = first): string[] {
  if (width === undefined) return [first + text];
  const out: string[] = [];
  let line = first;
  let lineCols = columns(first);
  let empty = true;
  for (const word of text.split(" ")) {
    if (word === "") continue;
    const w = columns(word);
    if (!empty && lineCols + 1 + w > width) {
      out.push(line);
      line = rest;
      lineCols = columns(rest);
      empty = true;
    }
    const room = width - lineCols - (empty ? 0 : 1);
    const piece = w > room ? cut(word, Math.max(1, room)) : word;
    line += (empty ? "" : " ") + piece;
    lineCols += (empty ? 0 : 1) + columns(piece);
    empty = false;
  }
  out.push(line);
  return out;
}

/**
 * A long line cut into rows of `width` columns, nothing left out: for a diff
 * a person approves, where a cut would hide what runs after it. Every row but
 * the first starts with `mark`.
 */
export function foldLine(line: string, width: number | undefined, mark = "↪ "): string[] {
  if (width === undefined || columns(line) <= width) return [line];
  const rows: string[] = [];
  let row = "";
  let n = 0;
  const markCols = columns(mark);
  for (const ch of line) {
    const w = charColumns(ch);
    if (n + w > width) {
      rows.push(row);
      row = mark;
      n = markCols;
    }
    row += ch;
    n += w;
  }
  rows.push(row);
  return rows;
}

/** The width to fit output to: the terminal's columns, or undefined for a pipe or a file (no fitting). */
export function widthOf(stream: NodeJS.WritableStream): number | undefined {
  const s = stream as NodeJS.WriteStream;
  return s.isTTY && s.columns ? s.columns : undefined;
}
