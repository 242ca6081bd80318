import { loadRules, type SecretRule } from "./rules.js";

/** A recognised secret: the rule that found it and where it is in the text (UTF-16 offsets, end exclusive). */
export interface FoundSecret {
  rule: string;
  start: number;
  end: number;
}

/** Shannon entropy in bits per character, as gitleaks measures a candidate. */
export function entropy(s: string): number {
  if (!s) return 0;
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  const n = [...s].length;
  for (const k of counts.values()) {
    const p = k / n;
    h -= p * Math.log2(p);
  }
  return h;
}

let defaults: SecretRule[] | undefined;
/** The bundled rules, compiled on first use. */
export function defaultRules(): SecretRule[] {
  defaults ??= loadRules();
  return defaults;
}

/**
 * A line longer than this is looked at only around each keyword in it: a rule
 * run over a megabyte line (a body of base64 on one line, where `key` and
 * `ey` turn up by chance) costs a second, and no rule's match reaches further
 * than `AROUND` from the keyword it holds.
 */
const LONG_LINE = 16 * 1024;
const AROUND = 1024;

/**
 * The [start, end) stretches of `lower` that hold one of `keywords`: each line
 * holding one, or around each one on a long line. Ascending by start.
 */
function stretchesWith(lower: string, keywords: readonly string[]): [number, number][] {
  const ends = new Map<number, number>();
  const add = (start: number, end: number) => ends.set(start, Math.max(end, ends.get(start) ?? end));
  for (const k of keywords) {
    // The line the last occurrence was on (its start, and its end: a "\n" or the text's end): a long line's
    // next occurrence is on it, found without a walk back to its start.
    let start = -1;
    let end = -1;
    for (let at = lower.indexOf(k); at >= 0; at = lower.indexOf(k, at + k.length)) {
      if (start < 0 || at > end) {
        start = lower.lastIndexOf("\n", at) + 1;
        const eol = lower.indexOf("\n", at);
        end = eol < 0 ? lower.length : eol;
      }
      if (end - start > LONG_LINE) {
        add(Math.max(start, at - AROUND), Math.min(end, at + k.length + AROUND));
        continue;
      }
      add(start, end);
      // The rest of this line is already taken: the next occurrence worth finding is on a later line.
      if (end === lower.length) break;
      at = end - k.length + 1;
    }
  }
  return [...ends].sort((a, b) => a[0] - b[0]);
}

/** Adjacent lines batched into blocks of up to this much: one matcher per block, not per line. */
const BLOCK_CHARS = 4096;

/**
 * The stretches as blocks: adjacent lines batched (a one-line rule cannot
 * match across a line break, so a block finds what its lines would one by
 * one), overlapping stretches of a long line joined.
 */
function blocks(stretches: readonly [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [start, end] of stretches) {
    const last = out[out.length - 1];
    if (last && start <= last[1]) last[1] = Math.max(last[1], end);
    else if (last && last[1] + 1 === start && end - last[0] <= BLOCK_CHARS) last[1] = end;
    else out.push([start, end]);
  }
  return out;
}

function matchAll(r: SecretRule, text: string, offset: number, found: FoundSecret[], whole: string = text): void {
  const m = r.re.matcher(text);
  while (m.find()) {
    const start = m.start(r.group);
    const end = m.end(r.group);
    if (start < 0 || end <= start) continue;
    if (r.entropy && entropy(whole.slice(offset + start, offset + end)) < r.entropy) continue;
    found.push({ rule: r.id, start: offset + start, end: offset + end });
  }
}

/**
 * Every secret the rules recognise in `text`, in order of start. Pure. A rule
 * runs only where one of its keywords occurs (case-insensitively), as gitleaks
 * prefilters: a one-line rule on the lines holding one, a multi-line rule (a
 * key block) on the whole text. A match whose secret lacks the rule's entropy
 * is not one. Line by line is also what keeps it fast: re2js matches a short
 * line far quicker than it walks a megabyte.
 */
export function scanSecrets(
  text: string,
  rules: readonly SecretRule[] = defaultRules(),
  skip: (rule: string) => boolean = () => false,
): FoundSecret[] {
  const found: FoundSecret[] = [];
  if (!text) return found;
  const lower = text.toLowerCase();
  for (const r of rules) {
    if (skip(r.id)) continue;
    if (r.multiline || !r.keywords.length) {
      if (!r.keywords.length || r.keywords.some((k) => lower.includes(k))) matchAll(r, text, 0, found);
      continue;
    }
    for (const [start, end] of blocks(stretchesWith(lower, r.keywords)))
      matchAll(r, text.slice(start, end), start, found, text);
  }
  return found.sort((a, b) => a.start - b.start || b.end - a.end);
}

export const maskMarker = (rule: string) => `[secret masked: ${rule}]`;

/**
 * `text` with each found secret replaced by a fixed marker naming its rule;
 * overlapping finds become one marker (the first's rule). Deterministic: the
 * same text masks the same way, so what the session log stores is what a
 * replay sends.
 */
export function maskSecrets(text: string, found: readonly FoundSecret[]): string {
  if (!found.length) return text;
  const sorted = [...found].sort((a, b) => a.start - b.start || b.end - a.end);
  let out = "";
  let at = 0;
  for (let i = 0; i < sorted.length; ) {
    const first = sorted[i]!;
    let end = first.end;
    let j = i + 1;
    while (j < sorted.length && sorted[j]!.start < end) end = Math.max(end, sorted[j++]!.end);
    out += text.slice(at, first.start) + maskMarker(first.rule);
    at = end;
    i = j;
  }
  return out + text.slice(at);
}
