import { styleMark } from "./terminal-safe.js";

export interface Style {
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  magenta(text: string): string;
  italic(text: string): string;
  underline(text: string): string;
  strike(text: string): string;
}

/**
 * A colour around text, nesting like picocolors (an inner close re-opens the
 * outer colour). The sequences use styleMark(), not ESC: terminal-safe.ts
 * turns them into escapes as the text is written, after making every
 * control character in the data visible.
 */
function sgr(open: number, close: number): (text: string) => string {
  let o = "";
  let c = "";
  return (text) => {
    if (!o) {
      o = `${styleMark()}[${open}m`;
      c = `${styleMark()}[${close}m`;
    }
    return o + text.replaceAll(c, c + o) + c;
  };
}

const COLOURS: Style = {
  bold: sgr(1, 22),
  dim: sgr(2, 22),
  red: sgr(31, 39),
  green: sgr(32, 39),
  yellow: sgr(33, 39),
  cyan: sgr(36, 39),
  magenta: sgr(35, 39),
  italic: sgr(3, 23),
  underline: sgr(4, 24),
  strike: sgr(9, 29),
};

const same = (text: string) => text;
const PLAIN: Style = {
  bold: same,
  dim: same,
  red: same,
  green: same,
  yellow: same,
  cyan: same,
  magenta: same,
  italic: same,
  underline: same,
  strike: same,
};

/**
 * Colour on a terminal unless NO_COLOR is set to anything but the empty
 * string (https://no-color.org) or TERM is dumb; FORCE_COLOR decides over
 * both, as in Node: "0" or "false" turns colour off, any other value on
 * (https://nodejs.org/api/cli.html#force_color1-2-3).
 */
export function colourWanted(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== "0" && force !== "false";
  return Boolean(stream.isTTY) && !env.NO_COLOR && env.TERM !== "dumb";
}

export function styleFor(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): Style {
  return colourWanted(stream, env) ? COLOURS : PLAIN;
}

/**
 * Answers rendered as Markdown: a terminal with colour only. Piped output and
 * NO_COLOR keep the model's text byte for byte (scripts, copy, logs).
 */
export function markdownWanted(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(stream.isTTY) && colourWanted(stream, env);
}
