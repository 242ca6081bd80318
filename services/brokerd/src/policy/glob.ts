/**
 * Path globs: `*` and `?` stay within one path segment, `**` crosses segments.
 * A pattern without `/` matches any single segment (so `.env` catches `a/b/.env`
 * and `.ssh` catches everything below a `.ssh` directory).
 *
 * Matching is a set-of-states simulation (Thompson NFA), never backtracking:
 * O(path length × pattern length) for any input, so no crafted glob or deeply
 * nested path can stall the event loop.
 */

type Tok =
  | { t: "lit"; c: string }
  /** `?`: one character except `/` (any character in tool-name globs). */
  | { t: "one" }
  /** `*`: any run without `/`. */
  | { t: "star" }
  /** `**` not followed by `/`: any run. */
  | { t: "any" }
  /** `**∕`: nothing (skip to the state after `dirsLoop`), or any run ending in `/`… */
  | { t: "dirs" }
  /** …whose inside is this state: any character stays, `/` may leave. */
  | { t: "dirsLoop" };

export interface Glob {
  test(s: string): boolean;
}

interface CompileOpts {
  ignoreCase?: boolean;
  /** Match starting at any segment boundary and ending at one (PathMatcher's unanchored forms). */
  floating?: boolean;
  /** Match from the start and ending at any segment boundary (PathMatcher's `./` forms: the root and below). */
  rooted?: boolean;
  /** Tool-name mode: `*` crosses everything, `?` is a literal. */
  names?: boolean;
}

function tokenize(glob: string, names: boolean): Tok[] {
  const toks: Tok[] = [];
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (names) {
      if (c === "*") {
        if (toks[toks.length - 1]?.t !== "any") toks.push({ t: "any" });
      } else toks.push({ t: "lit", c });
      continue;
    }
    if (c === "*") {
      if (glob[i + 1] === "*") {
        i++;
        while (glob[i + 1] === "*") i++;
        if (glob[i + 1] === "/") {
          i++;
          toks.push({ t: "dirs" }, { t: "dirsLoop" });
        } else toks.push({ t: "any" });
      } else toks.push({ t: "star" });
    } else if (c === "?") toks.push({ t: "one" });
    else toks.push({ t: "lit", c });
  }
  return toks;
}

class Nfa implements Glob {
  private readonly toks: Tok[];
  private readonly ignoreCase: boolean;
  private readonly floating: boolean;
  private readonly endAtBoundary: boolean;
  private readonly bufA: Uint8Array;
  private readonly bufB: Uint8Array;

  constructor(glob: string, opts: CompileOpts) {
    this.ignoreCase = opts.ignoreCase ?? false;
    this.floating = opts.floating ?? false;
    this.endAtBoundary = this.floating || (opts.rooted ?? false);
    this.toks = tokenize(this.ignoreCase ? glob.toLowerCase() : glob, opts.names ?? false);
    this.bufA = new Uint8Array(this.toks.length + 1);
    this.bufB = new Uint8Array(this.toks.length + 1);
  }

  /** Adds the states reachable without input (every wildcard may match nothing). */
  private close(set: Uint8Array): void {
    for (let i = 0; i < this.toks.length; i++) {
      const t = this.toks[i]!.t;
      if (!set[i]) continue;
      if (t === "star" || t === "any") set[i + 1] = 1;
      else if (t === "dirs") set[i + 2] = 1;
    }
  }

  test(input: string): boolean {
    const s = this.ignoreCase ? input.toLowerCase() : input;
    const m = this.toks.length;
    // Two state sets reused across calls (test never re-enters): a matcher runs per segment of every path.
    let cur = this.bufA;
    let next = this.bufB;
    cur.fill(0);
    cur[0] = 1;
    this.close(cur);
    for (let k = 0; k < s.length; k++) {
      const ch = s[k]!;
      if (this.endAtBoundary && ch === "/" && cur[m]) return true;
      next.fill(0);
      let live = false;
      for (let i = 0; i < m; i++) {
        if (!cur[i]) continue;
        const tok = this.toks[i]!;
        switch (tok.t) {
          case "lit":
            if (tok.c === ch) next[i + 1] = 1;
            break;
          case "one":
            if (ch !== "/") next[i + 1] = 1;
            break;
          case "star":
            if (ch !== "/") next[i] = 1;
            break;
          case "any":
            next[i] = 1;
            break;
          case "dirs":
            next[i + 1] = 1;
            if (ch === "/") next[i + 2] = 1;
            break;
          case "dirsLoop":
            next[i] = 1;
            if (ch === "/") next[i + 1] = 1;
            break;
        }
      }
      if (this.floating && ch === "/") next[0] = 1;
      this.close(next);
      for (let i = 0; i <= m; i++) if (next[i]) live = true;
      if (!live && !this.floating) return false;
      [cur, next] = [next, cur];
    }
    return cur[m] === 1;
  }
}

/** A compiled glob (linear-time matcher). */
export function compileGlob(glob: string, opts: CompileOpts = {}): Glob {
  return new Nfa(glob, opts);
}

/**
 * Matches a `/`-separated path against globs: `/abs/…` whole absolute paths,
 * `./x` the workspace-relative path from the root (and anything below it),
 * any other glob at any depth.
 *
 * Most globs in the secret and protected lists are plain names (`.env`,
 * `.aws/credentials`) or one segment with a wildcard (`*.pem`): those are
 * matched segment by segment (a map lookup, a one-segment automaton), so a
 * hundred of them cost about what one did against a 4,000-segment path. The
 * rest run the general automaton over the whole path.
 */
export class PathMatcher {
  private readonly ignoreCase: boolean;
  /** Plain floating globs, by their first segment. */
  private readonly plain = new Map<string, { glob: string; segs: string[] }[]>();
  /** Plain `./` globs. */
  private readonly plainRooted: { glob: string; segs: string[] }[] = [];
  /** One segment with wildcards, floating or rooted. */
  private readonly oneSegment: { glob: string; rooted: boolean; g: Glob }[] = [];
  private readonly general: { glob: string; abs: boolean; g: Glob }[] = [];

  constructor(globs: readonly string[], opts: { ignoreCase?: boolean } = {}) {
    const ignoreCase = opts.ignoreCase ?? false;
    this.ignoreCase = ignoreCase;
    const fold = (x: string) => (ignoreCase ? x.toLowerCase() : x);
    for (const glob of globs) {
      if (glob.startsWith("/")) {
        this.general.push({ glob, abs: true, g: compileGlob(glob, { ignoreCase }) });
        continue;
      }
      const rooted = glob.startsWith("./");
      const body = rooted ? glob.slice(2) : glob;
      const segs = fold(body).split("/").filter(Boolean);
      const wild = /[*?]/.test(body);
      if (!wild && segs.length > 0) {
        if (rooted) this.plainRooted.push({ glob, segs });
        else {
          const list = this.plain.get(segs[0]!) ?? [];
          list.push({ glob, segs });
          this.plain.set(segs[0]!, list);
        }
      } else if (segs.length === 1 && !body.includes("**")) {
        this.oneSegment.push({ glob, rooted, g: compileGlob(segs[0]!, {}) });
      } else {
        // `.env`-style globs start at a segment boundary and end at one, wherever they sit.
        this.general.push({
          glob,
          abs: false,
          g: compileGlob(body, { ignoreCase, ...(rooted ? { rooted: true } : { floating: true }) }),
        });
      }
    }
  }

  /** `rel` is workspace-relative; `abs` is the canonical absolute path. */
  matches(rel: string, abs: string): boolean {
    return this.firstMatch(rel, abs) !== undefined;
  }

  /** A glob that matches, as written (for the reason a person is shown). */
  firstMatch(rel: string, abs: string): string | undefined {
    const parts = rel.split("/").filter(Boolean);
    const norm = parts.join("/");
    const segs = this.ignoreCase ? norm.toLowerCase().split("/").filter(Boolean) : parts;
    const runAt = (i: number, want: readonly string[]) =>
      i + want.length <= segs.length && want.every((w, k) => segs[i + k] === w);
    for (const p of this.plainRooted) if (runAt(0, p.segs)) return p.glob;
    if (this.plain.size > 0)
      for (let i = 0; i < segs.length; i++) {
        for (const p of this.plain.get(segs[i]!) ?? []) if (runAt(i, p.segs)) return p.glob;
      }
    for (const p of this.oneSegment) {
      if (p.rooted ? segs.length > 0 && p.g.test(segs[0]!) : segs.some((s) => p.g.test(s))) return p.glob;
    }
    for (const c of this.general) if (c.g.test(c.abs ? abs : norm)) return c.glob;
    return undefined;
  }
}

/** Matches the whole relative path only (for policy rules: `src/**` must not match `x/src/a`). */
export function matchesRuleGlob(glob: string, rel: string, abs: string): boolean {
  // `./src/**` reads as the workspace's src/, which is what the relative path already is.
  const g = glob.startsWith("./") ? glob.slice(2) : glob;
  return compileGlob(g).test(g.startsWith("/") ? abs : rel);
}

/** Tool-name globs: `*` crosses dots, so `github.*` and `*` both work. */
export function toolGlobMatches(glob: string, name: string): boolean {
  return compileGlob(glob, { names: true }).test(name);
}
