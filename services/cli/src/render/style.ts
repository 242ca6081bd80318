import { styleMark } from "./terminal-safe.js";

export interface Style {
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  magenta(text: string): string;
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
};

/** Colour only on a terminal and never when NO_COLOR is set (https://no-color.org). */
export function styleFor(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): Style {
  const enabled = Boolean(stream.isTTY) && !("NO_COLOR" in env) && env.TERM !== "dumb";
  return enabled || "FORCE_COLOR" in env ? COLOURS : PLAIN;
}
