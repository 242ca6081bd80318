/**
 * Many exact strings looked for in one pass over a text (Rabin–Karp on a fixed
 * window): the values of a run's secret files, each in its encoded forms, are
 * hundreds of needles, and `indexOf` once per needle over a megabyte body per
 * view would cost that many passes. Pure.
 */

/** Every needle is at least this long; the window the hash rolls over. */
const NEEDLE_WINDOW = 8;

const BASE = 257;

export class Needles {
  private readonly byHash = new Map<number, string[]>();
  /** BASE^(window-1), for taking the leaving character out of the rolling hash. */
  private readonly top: number;

  constructor(needles: Iterable<string>) {
    for (const n of new Set(needles)) {
      if (n.length < NEEDLE_WINDOW) continue;
      const h = hashOf(n, 0);
      const list = this.byHash.get(h);
      if (list) list.push(n);
      else this.byHash.set(h, [n]);
    }
    let top = 1;
    for (let i = 1; i < NEEDLE_WINDOW; i++) top = Math.imul(top, BASE) >>> 0;
    this.top = top;
  }

  get size(): number {
    let n = 0;
    for (const l of this.byHash.values()) n += l.length;
    return n;
  }

  /** The first needle found in `text` (leftmost), or undefined. */
  firstIn(text: string): string | undefined {
    if (!this.byHash.size || text.length < NEEDLE_WINDOW) return undefined;
    let h = hashOf(text, 0);
    for (let i = 0; ; i++) {
      const candidates = this.byHash.get(h);
      if (candidates) for (const n of candidates) if (text.startsWith(n, i)) return n;
      if (i + NEEDLE_WINDOW >= text.length) return undefined;
      h =
        (Math.imul((h - Math.imul(text.charCodeAt(i), this.top)) >>> 0, BASE) + text.charCodeAt(i + NEEDLE_WINDOW)) >>>
        0;
    }
  }
}

function hashOf(s: string, at: number): number {
  let h = 0;
  for (let i = at; i < at + NEEDLE_WINDOW; i++) h = (Math.imul(h, BASE) + s.charCodeAt(i)) >>> 0;
  return h;
}
