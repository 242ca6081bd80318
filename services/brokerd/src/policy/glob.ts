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

  constructor(glob: string, opts: CompileOpts) {
    this.ignoreCase = opts.ignoreCase ?? false;
    this.floating = opts.floating ?? false;
    this.toks = tokenize(this.ignoreCase ? glob.toLowerCase() : glob, opts.names ?? false);
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
    let cur = new Uint8Array(m + 1);
    let next = new Uint8Array(m + 1);
    cur[0] = 1;
    this.close(cur);
    for (let k = 0; k < s.length; k++) {
      const ch = s[k]!;
      if (this.floating && ch === "/" && cur[m]) return true;
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

/** Kept for callers that want the whole-string form; returns a matcher with `.test`, not a RegExp. */
export function globToRegExp(glob: string): Glob {
  return compileGlob(glob);
}

/** Matches a `/`-separated path against a glob, anchored at the start unless the glob has no `/`. */
export class PathMatcher {
  private readonly floating: Glob[] = [];
  private readonly anchored: Glob[] = [];

  constructor(globs: readonly string[], opts: { ignoreCase?: boolean } = {}) {
    const ignoreCase = opts.ignoreCase ?? false;
    for (const g of globs) {
      // `.env` matches any one segment; `.aws/credentials` that run of segments wherever it sits,
      // and anything below either: both are "start at a segment boundary, end at one".
      if (g.startsWith("/")) this.anchored.push(compileGlob(g, { ignoreCase }));
      else this.floating.push(compileGlob(g, { ignoreCase, floating: true }));
    }
  }

  /** `rel` is workspace-relative; `abs` is the canonical absolute path. */
  matches(rel: string, abs: string): boolean {
    if (this.anchored.some((r) => r.test(abs))) return true;
    const norm = rel.split("/").filter(Boolean).join("/");
    return this.floating.some((r) => r.test(norm));
  }
}

/** Matches the whole relative path only (for policy rules: `src/**` must not match `x/src/a`). */
export function matchesRuleGlob(glob: string, rel: string, abs: string): boolean {
  return compileGlob(glob).test(glob.startsWith("/") ? abs : rel);
}

/** Tool-name globs: `*` crosses dots, so `github.*` and `*` both work. */
export function toolGlobMatches(glob: string, name: string): boolean {
  return compileGlob(glob, { names: true }).test(name);
}
