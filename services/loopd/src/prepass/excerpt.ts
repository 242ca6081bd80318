import type { BlockKind } from "./kind.js";
import { runSuffix } from "./reduce.js";

/** Lines that usually explain a failure. */
const LOG_ALERT =
  /\b(error|errors|err|warn|warning|fatal|panic|panicked|exception|traceback|critical|failed|failure|assert(ion)?)\b/i;
const TRACE_START =
  /^(Traceback \(most recent call last\)|goroutine \d+ \[|thread '.*' panicked|Exception in thread|\s+at \S)/;
const DECL =
  /^\s*(import\s|export\s|from\s\S+\simport|#include|package\s|using\s|(pub(\(crate\))?\s+)?(fn|struct|enum|impl|trait|mod|type|const|static)\s|(async\s+)?def\s|class\s|(export\s+)?(default\s+)?(async\s+)?function\b|interface\s|type\s+\w+|func\s|(public|private|protected|internal)\s.*[({]\s*$|#\s*define\s|@\w+)/;

function clip(line: string, max: number): string {
  return line.length <= max ? line : `${line.slice(0, max)} [… ${line.length - max} more characters]`;
}

/**
 * The chosen lines in order, verbatim (a line longer than `maxLine` is cut
 * with a mark), runs of identical lines collapsed with their count, and every
 * omission marked with its line numbers so read_blob can fetch exactly those.
 */
function render(lines: readonly string[], keep: readonly number[], numbered: boolean, maxLine: number): string {
  const out: string[] = [];
  let prev = -1;
  const sorted = [...new Set(keep)].sort((a, b) => a - b);
  for (let k = 0; k < sorted.length; ) {
    const j = sorted[k]!;
    if (j > prev + 1) out.push(`[… lines ${prev + 2}-${j} omitted …]`);
    let run = 1;
    while (k + run < sorted.length && sorted[k + run] === j + run && lines[j + run] === lines[j]) run++;
    const text = clip(lines[j]!, maxLine);
    out.push((numbered ? `${j + 1}: ` : "") + (run >= 3 ? text + runSuffix(run) : text));
    if (run < 3) run = 1;
    prev = j + run - 1;
    k += run;
  }
  if (prev < lines.length - 1) out.push(`[… lines ${prev + 2}-${lines.length} omitted …]`);
  return out.join("\n");
}

/** Adds lines [from, to] to keep while the budget lasts; false once it is spent. */
class Picker {
  readonly keep = new Set<number>();
  used = 0;
  constructor(
    private readonly lines: readonly string[],
    private readonly budget: number,
    private readonly maxLine: number,
  ) {}
  add(from: number, to: number): boolean {
    const a = Math.max(0, from);
    const b = Math.min(this.lines.length - 1, to);
    let cost = 0;
    for (let j = a; j <= b; j++) if (!this.keep.has(j)) cost += Math.min(this.lines[j]!.length, this.maxLine) + 8;
    if (this.used + cost > this.budget) return false;
    for (let j = a; j <= b; j++) this.keep.add(j);
    this.used += cost;
    return true;
  }
}

function logExcerpt(lines: readonly string[], budget: number, maxLine: number): string {
  const p = new Picker(lines, budget, maxLine);
  p.add(0, 2);
  p.add(lines.length - 4, lines.length - 1);
  // Fatal and error lines first, then warnings: the budget goes to what explains a failure.
  const severe: number[] = [];
  const warn: number[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (TRACE_START.test(l) && !/^\s+at /.test(l)) severe.push(i);
    else if (LOG_ALERT.test(l)) (/\bwarn(ing)?\b/i.test(l) ? warn : severe).push(i);
  }
  for (const i of severe) {
    // A traceback runs on through its indented frames to the exception line.
    let end = i + 2;
    if (TRACE_START.test(lines[i]!)) {
      end = i + 1;
      while (end < lines.length - 1 && end - i < 60 && (/^\s/.test(lines[end]!) || /^\s*$/.test(lines[end]!))) end++;
      end = Math.min(end + 1, lines.length - 1);
    }
    if (!p.add(i - 2, end)) p.add(i, i);
  }
  for (const i of warn) if (!p.add(i - 1, i + 1)) p.add(i, i);
  return render(lines, [...p.keep], false, maxLine);
}

function sourceExcerpt(lines: readonly string[], budget: number, maxLine: number): string {
  const p = new Picker(lines, budget, maxLine);
  for (let i = 0; i < lines.length; i++) if (DECL.test(lines[i]!)) p.add(i, i);
  return render(lines, [...p.keep], true, maxLine);
}

function diffExcerpt(lines: readonly string[], budget: number, maxLine: number): string {
  const p = new Picker(lines, budget, maxLine);
  const out: string[] = [];
  let file = "";
  let hunks = 0;
  let plus = 0;
  let minus = 0;
  const flush = () => {
    if (file) out.push(`${file}  (${hunks} hunks, +${plus} -${minus})`);
  };
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (l.startsWith("diff --git ") || (l.startsWith("--- ") && !file.startsWith("diff"))) {
      if (l.startsWith("diff --git ") || !file) {
        flush();
        file = clip(l, maxLine);
        hunks = plus = minus = 0;
      }
      p.add(i, i);
    } else if (l.startsWith("+++ ") || l.startsWith("--- ")) p.add(i, i);
    else if (l.startsWith("@@")) {
      hunks++;
      p.add(i, i);
    } else if (l.startsWith("+")) plus++;
    else if (l.startsWith("-")) minus++;
  }
  flush();
  const summary = out.join("\n");
  return `${summary}\n[headers and hunk lines, verbatim:]\n${render(lines, [...p.keep], true, maxLine)}`;
}

function proseExcerpt(lines: readonly string[], budget: number, maxLine: number): string {
  const p = new Picker(lines, budget / 2, maxLine);
  for (let i = 0; i < lines.length && p.add(i, i); i++);
  const q = new Picker(lines, budget / 2, maxLine);
  for (const j of p.keep) q.keep.add(j);
  for (let i = lines.length - 1; i >= 0 && (q.keep.has(i) || q.add(i, i)); i--);
  return render(lines, [...q.keep], false, maxLine);
}

/** JSON: its key structure, with a few sampled values and array lengths. */
function jsonExcerpt(text: string, budget: number): string {
  const value: unknown = JSON.parse(text);
  const out: string[] = [];
  let used = 0;
  const emit = (s: string) => {
    if (used + s.length + 1 > budget) return false;
    out.push(s);
    used += s.length + 1;
    return true;
  };
  const sample = (v: unknown) => {
    const s = JSON.stringify(v);
    return s.length > 80 ? `${s.slice(0, 80)}…` : s;
  };
  const walk = (v: unknown, path: string, depth: number): boolean => {
    if (Array.isArray(v)) {
      if (!emit(`${path || "$"}: array[${v.length}]`)) return false;
      // The first element shows the shape; the others are usually alike.
      if (v.length && depth < 6) return walk(v[0], `${path}[0]`, depth + 1);
      return true;
    }
    if (v && typeof v === "object") {
      const keys = Object.keys(v);
      if (!emit(`${path || "$"}: object{${keys.length} keys}`)) return false;
      if (depth >= 6) return true;
      for (const k of keys.slice(0, 50)) {
        if (
          !walk(
            (v as Record<string, unknown>)[k],
            `${path}.${/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k)}`,
            depth + 1,
          )
        )
          return false;
      }
      if (keys.length > 50) emit(`${path || "$"}: … ${keys.length - 50} more keys`);
      return true;
    }
    return emit(`${path || "$"} = ${sample(v)}`);
  };
  walk(value, "", 0);
  if (used + 40 > budget) out.push("[… structure cut at the excerpt budget]");
  return out.join("\n");
}

/** The verbatim excerpt for a block of this kind, within about `budget` bytes. */
export function excerptByKind(kind: BlockKind, text: string, lines: readonly string[], budget: number): string {
  const maxLine = Math.max(200, Math.floor(budget / 8));
  switch (kind) {
    case "log":
      return logExcerpt(lines, budget, maxLine);
    case "source":
      return sourceExcerpt(lines, budget, maxLine);
    case "diff":
      return diffExcerpt(lines, budget, maxLine);
    case "json":
      return jsonExcerpt(text, budget);
    case "prose":
      return proseExcerpt(lines, budget, maxLine);
  }
}

export const SHOWN: Record<BlockKind, string> = {
  log: "the first and last lines and every error, warning, fatal, panic and traceback line with context",
  source: "its imports and declarations, numbered",
  json: "its key structure with sampled values",
  diff: "file headers, hunk counts and hunk lines",
  prose: "the start and the end",
};
