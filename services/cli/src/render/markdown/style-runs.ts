// Styled prose wrapped onto several lines carries its styles across the
// breaks: a bold phrase cut in two is bold on both lines and each line ends
// with every style closed. A line drawn on its own (redrawn in place, or
// with the status line drawn and erased beside it) then never leaks a
// colour into what is written next.
import { styleMark } from "../terminal-safe.js";

/** SGR codes the CLI's styles open, keyed to the code that closes them (style.ts). */
const CLOSES: Record<string, string> = {
  "1": "22",
  "2": "22",
  "3": "23",
  "4": "24",
  "9": "29",
  "31": "39",
  "32": "39",
  "33": "39",
  "35": "39",
  "36": "39",
};

export function carryStyles(lines: string[]): string[] {
  const mark = styleMark();
  const seq = new RegExp(`${mark}\\[([0-9;]*)m`, "g");
  // Open styles in the order they were opened: code → the code that closes it.
  let open: string[] = [];
  return lines.map((line) => {
    const prefix = open.map((c) => `${mark}[${c}m`).join("");
    for (const m of line.matchAll(seq)) {
      const code = m[1]!;
      if (code === "0" || code === "") open = [];
      else if (CLOSES[code]) open = [...open.filter((c) => CLOSES[c] !== CLOSES[code]), code];
      else open = open.filter((c) => CLOSES[c] !== code);
    }
    return prefix + line + (open.length ? `${mark}[0m` : "");
  });
}
