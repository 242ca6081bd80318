// Markdown's inline marks (code spans, emphasis, strikethrough, links,
// images, autolinks, backslash escapes) turned into the CLI's styles. What a
// mark does not change is kept: an unclosed `**` or a lone `_` stays as
// written, and a link shows its address beside its text, because on a
// terminal a person can only judge a link by where it points.
import type { Style } from "../style.js";

/** ASCII punctuation a backslash makes literal (CommonMark §2.4). */
const ESCAPABLE = /[!-/:-@[-`{-~]/;

/** The end of a run opened at `from` by `mark`, or -1: the same mark, not preceded by a space. */
function closing(text: string, mark: string, from: number): number {
  for (let i = from; i <= text.length - mark.length; i++) {
    if (text[i] === "\\") {
      i++;
      continue;
    }
    if (text[i] === "`") {
      // A code span inside emphasis is opaque: its marks do not close anything.
      const end = codeSpanEnd(text, i);
      if (end > 0) {
        i = end - 1;
        continue;
      }
    }
    if (text.startsWith(mark, i) && i > from && text[i - 1] !== " ") return i;
  }
  return -1;
}

/** Where a code span starting at `i` (a run of backticks) ends (just past its closing run), or -1. */
function codeSpanEnd(text: string, i: number): number {
  let n = 0;
  while (text[i + n] === "`") n++;
  const fence = "`".repeat(n);
  let j = text.indexOf(fence, i + n);
  while (j >= 0) {
    let m = 0;
    while (text[j + m] === "`") m++;
    if (m === n) return j + n;
    j = text.indexOf(fence, j + m);
  }
  return -1;
}

const isWordChar = (c: string | undefined) => c !== undefined && /[\p{L}\p{N}]/u.test(c);

/** A link or image's `[text](address)` at `i` (the `[`): its text, address and end, or undefined. */
function linkAt(text: string, i: number): { label: string; href: string; end: number } | undefined {
  let depth = 0;
  let j = i;
  for (; j < text.length; j++) {
    if (text[j] === "\\") j++;
    else if (text[j] === "[") depth++;
    else if (text[j] === "]" && --depth === 0) break;
  }
  if (j >= text.length || text[j + 1] !== "(") return undefined;
  const close = text.indexOf(")", j + 2);
  if (close < 0) return undefined;
  const href = text
    .slice(j + 2, close)
    .trim()
    .replace(/\s+"[^"]*"$/, "");
  if (/\s/.test(href)) return undefined;
  return { label: text.slice(i + 1, j), href, end: close + 1 };
}

/** One line's inline Markdown with the marks turned into styles. */
export function renderInline(text: string, s: Style): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === "\\" && ESCAPABLE.test(text[i + 1] ?? "")) {
      out += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "`") {
      const end = codeSpanEnd(text, i);
      if (end > 0) {
        let n = 0;
        while (text[i + n] === "`") n++;
        let code = text.slice(i + n, end - n);
        // CommonMark strips one space each side when both are there (a span that shows backticks).
        if (code.length > 2 && code.startsWith(" ") && code.endsWith(" ") && code.trim()) code = code.slice(1, -1);
        out += s.cyan(code);
        i = end;
        continue;
      }
      // An unclosed run stays as it is, all of it.
      let n = 0;
      while (text[i + n] === "`") n++;
      out += text.slice(i, i + n);
      i += n;
      continue;
    }
    if (c === "!" && text[i + 1] === "[") {
      const link = linkAt(text, i + 1);
      if (link) {
        out += s.dim(`[image: ${renderInline(link.label, s)}]`) + s.dim(` (${link.href})`);
        i = link.end;
        continue;
      }
    }
    if (c === "[") {
      const link = linkAt(text, i);
      if (link) {
        const label = renderInline(link.label, s);
        out += link.label === link.href ? s.underline(link.href) : `${s.underline(label)}${s.dim(` (${link.href})`)}`;
        i = link.end;
        continue;
      }
    }
    if (c === "<") {
      const auto = /^<((?:https?|mailto|ftp):[^\s<>]+)>/.exec(text.slice(i));
      if (auto) {
        out += s.underline(auto[1]!);
        i += auto[0].length;
        continue;
      }
    }
    if (c === "~" && text[i + 1] === "~") {
      const end = text[i + 2] !== " " ? closing(text, "~~", i + 2) : -1;
      if (end > 0) {
        out += s.strike(renderInline(text.slice(i + 2, end), s));
        i = end + 2;
        continue;
      }
    }
    if (c === "*" || c === "_") {
      const double = text[i + 1] === c;
      const mark = double ? c + c : c;
      const after = text[i + mark.length];
      // `_` inside a word (snake_case) is not emphasis; neither is a mark followed by a space.
      const opens = after !== undefined && after !== " " && !(c === "_" && isWordChar(text[i - 1]));
      const end = opens ? closing(text, mark, i + mark.length) : -1;
      if (end > 0 && !(c === "_" && isWordChar(text[end + mark.length]))) {
        const inner = renderInline(text.slice(i + mark.length, end), s);
        out += double ? s.bold(inner) : s.italic(inner);
        i = end + mark.length;
        continue;
      }
      out += mark;
      i += mark.length;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}
