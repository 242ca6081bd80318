/**
 * The lines of a long write a person must see before approving it: the ones
 * that can run or steer a later program. A reviewed write (a hook, a script,
 * CI, an instruction file) shown only by its first lines let a payload on line
 * 3,500 be approved unseen; here every added line past them is kept unless it
 * cannot run (common's runnable-lines.ts). Runs of one repeated line show once
 * with their count, so padding cannot push the rest off the screen.
 */
import { runnableLineTest } from "@boxmaker/common/lite";

export interface ActiveDiff {
  /** The diff to show: headers, the first lines whole, then only active lines with markers where others were left out. */
  diff: string;
  /** Lines left out (blank, comments, removed or unchanged), 0 when the diff is whole. */
  omitted: number;
}

function pathOfDiff(lines: readonly string[]): string {
  const plus = lines.find((l) => l.startsWith("+++ "));
  return plus ? plus.slice(4).replace(/^b\//, "").trim() : "";
}

/** `diff` with every line past the first `keep` body lines that cannot run left out, and said so. */
export function activeDiff(diff: string, keep: number, path = ""): ActiveDiff {
  const lines = diff.replace(/\n+$/, "").split("\n");
  const file = path || pathOfDiff(lines);
  const added = lines.filter((l) => l.startsWith("+") && !l.startsWith("+++")).map((l) => l.slice(1));
  const runs = runnableLineTest(file, added);
  const out: string[] = [];
  let body = 0;
  let skipped = 0;
  let omitted = 0;
  const flushSkipped = () => {
    if (skipped > 0)
      out.push(`⋮ ${skipped} line${skipped === 1 ? "" : "s"} not shown: blank, comments, removed or unchanged`);
    skipped = 0;
  };
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    const header = /^(\+\+\+ |--- |@@)/.test(l);
    if (header || body < keep) {
      if (!header) body++;
      out.push(l);
      continue;
    }
    const inert = !l.startsWith("+") || !runs(l.slice(1));
    if (inert) {
      skipped++;
      omitted++;
      continue;
    }
    flushSkipped();
    let n = 1;
    while (lines[i + n] === l) n++;
    out.push(n > 1 ? `${l}  ⟨×${n}⟩` : l);
    i += n - 1;
  }
  flushSkipped();
  return { diff: `${out.join("\n")}\n`, omitted };
}
