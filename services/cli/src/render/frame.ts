// A tool call's frame as the live view and `show` draw it: the call on its first line, the
// result's first lines under it, each line as the tool gave it and cut to the width.
import { columns, cut, faithfulLine, oneLineArguments } from "./columns.js";
import type { Style } from "./style.js";

/** Not on a terminal (a pipe, a log file) no width applies; a frame's lines still end somewhere. */
const PIPED_ARGS = 200;
const PIPED_RESULT = 160;

/** "┌ name arguments" in at most `width` columns; the arguments exactly as the model wrote them, up to the cut. */
export function callLine(name: string, args: string, s: Style, width: number | undefined): string {
  const head = `┌ ${name} `;
  if (width !== undefined && columns(head) >= width) return s.cyan(cut(head, width));
  const room = width === undefined ? PIPED_ARGS : width - columns(head);
  return s.cyan(`┌ ${s.bold(name)} ${cut(faithfulLine(oneLineArguments(args)), room)}`);
}

/** The first `max` lines of a result, indentation and repeated spaces kept, each cut to the width. */
export function resultLines(content: string, max: number, s: Style, width: number | undefined): string[] {
  // A CRLF ends a line; a CR anywhere else (a lone one at the very end too) is data, shown as ␍.
  const lines = content.replace(/(\r?\n)+$/, "").split(/\r?\n/);
  const room = width === undefined ? PIPED_RESULT : width - 2;
  return lines.slice(0, max).map((l) => s.cyan("│ ") + s.dim(cut(faithfulLine(l), room)));
}
