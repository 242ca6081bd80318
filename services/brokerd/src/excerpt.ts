/** Lines that usually explain a failure; code keeps them verbatim, nothing paraphrases. */
const ERROR_LINE = /\b(error|errors|failed|failure|fatal|panic|exception|traceback|assert(ion)?)\b|^\s*E\s|✗|FAIL/i;

export interface Excerpt {
  text: string;
  lines: number;
  kind: "errors" | "head-tail";
}

function clip(line: string, max: number): string {
  return line.length <= max ? line : `${line.slice(0, max)} [… ${line.length - max} more characters]`;
}

/**
 * A verbatim excerpt of a large result within `budget` bytes. When the text has
 * error lines, those with `context` lines around them; otherwise the head and
 * the tail, since that is where commands print what happened. Omissions are
 * marked with their line numbers so the model can ask for exactly those.
 */
export function excerpt(text: string, budget: number, context = 2): Excerpt {
  const lines = text.split("\n");
  const maxLine = Math.max(200, Math.floor(budget / 8));
  const errorIdx = lines.flatMap((l, i) => (ERROR_LINE.test(l) ? [i] : []));
  if (errorIdx.length > 0) {
    const keep = new Set<number>();
    let used = 0;
    for (const i of errorIdx) {
      const from = Math.max(0, i - context);
      const to = Math.min(lines.length - 1, i + context);
      const add: number[] = [];
      for (let j = from; j <= to; j++) if (!keep.has(j)) add.push(j);
      const cost = add.reduce((n, j) => n + Math.min(lines[j]!.length, maxLine) + 8, 0);
      if (used + cost > budget) break;
      for (const j of add) keep.add(j);
      used += cost;
    }
    // Always show the last lines too: a summary ("3 failed") usually sits there.
    for (let j = Math.max(0, lines.length - 3); j < lines.length; j++) keep.add(j);
    const out: string[] = [];
    let prev = -1;
    for (const j of [...keep].sort((a, b) => a - b)) {
      if (j > prev + 1) out.push(`[… lines ${prev + 2}-${j} omitted …]`);
      out.push(clip(lines[j]!, maxLine));
      prev = j;
    }
    if (prev < lines.length - 1) out.push(`[… lines ${prev + 2}-${lines.length} omitted …]`);
    return { text: out.join("\n"), lines: lines.length, kind: "errors" };
  }
  const half = Math.floor(budget / 2);
  const head: string[] = [];
  let used = 0;
  for (const l of lines) {
    const c = clip(l, maxLine);
    if (used + c.length + 1 > half) break;
    head.push(c);
    used += c.length + 1;
  }
  const tail: string[] = [];
  used = 0;
  for (let i = lines.length - 1; i >= head.length; i--) {
    const c = clip(lines[i]!, maxLine);
    if (used + c.length + 1 > half) break;
    tail.unshift(c);
    used += c.length + 1;
  }
  const gapFrom = head.length + 1;
  const gapTo = lines.length - tail.length;
  const gap = gapTo >= gapFrom ? [`[… lines ${gapFrom}-${gapTo} omitted …]`] : [];
  return { text: [...head, ...gap, ...tail].join("\n"), lines: lines.length, kind: "head-tail" };
}
