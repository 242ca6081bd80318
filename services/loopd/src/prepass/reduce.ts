/**
 * Lossless reductions of a pasted block. ANSI escapes are dropped (colour
 * carries nothing the model can use; the blob keeps the original bytes), and
 * runs of identical lines become one line with a count, which `expandRuns`
 * turns back into exactly the input.
 */

// CSI sequences (colours, cursor moves), OSC sequences (titles, links), and lone two-byte escapes.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching the ESC and BEL control characters is the point: ANSI escapes are stripped from pasted terminal output
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

export function stripAnsi(text: string): string {
  return text.includes("\x1b") ? text.replace(ANSI, "") : text;
}

/** The suffix a collapsed run carries: `line [×12 identical lines]`. */
const RUN = / \[×(\d+) identical lines\]$/;
export const runSuffix = (n: number) => ` [×${n} identical lines]`;

/**
 * Collapses runs of at least `minRun` identical lines. A line that already
 * ends like a run marker is written with an explicit `[×1 …]` so expansion
 * stays exact.
 */
export function collapseRuns(text: string, minRun = 3): string {
  const lines = text.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; ) {
    const l = lines[i]!;
    let j = i + 1;
    while (j < lines.length && lines[j] === l) j++;
    const n = j - i;
    if (n >= minRun || RUN.test(l)) {
      if (RUN.test(l) && n < minRun) for (let k = 0; k < n; k++) out.push(l + runSuffix(1));
      else out.push(l + runSuffix(n));
    } else {
      for (let k = 0; k < n; k++) out.push(l);
    }
    i = j;
  }
  return out.join("\n");
}

/** The inverse of collapseRuns. */
export function expandRuns(text: string): string {
  const out: string[] = [];
  for (const l of text.split("\n")) {
    const m = RUN.exec(l);
    if (!m) {
      out.push(l);
      continue;
    }
    const line = l.slice(0, m.index);
    for (let k = 0; k < Number(m[1]); k++) out.push(line);
  }
  return out.join("\n");
}
