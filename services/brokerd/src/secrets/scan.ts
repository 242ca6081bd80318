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
 * Every secret the rules recognise in `text`, in order of start. Pure. A rule
 * is skipped unless one of its keywords occurs (case-insensitively), and a
 * match whose secret lacks the rule's entropy is not one.
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
    if (r.keywords.length && !r.keywords.some((k) => lower.includes(k))) continue;
    const m = r.re.matcher(text);
    while (m.find()) {
      const start = m.start(r.group);
      const end = m.end(r.group);
      if (start < 0 || end <= start) continue;
      if (r.entropy && entropy(text.slice(start, end)) < r.entropy) continue;
      found.push({ rule: r.id, start, end });
    }
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
