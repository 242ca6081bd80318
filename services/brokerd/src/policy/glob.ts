/**
 * Path globs: `*` and `?` stay within one path segment, `**` crosses segments.
 * A pattern without `/` matches any single segment (so `.env` catches `a/b/.env`
 * and `.ssh` catches everything below a `.ssh` directory).
 */
export function globToRegExp(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") {
      if (glob[i + 1] === "*") {
        i++;
        if (glob[i + 1] === "/") {
          i++;
          re += "(?:.*/)?";
        } else re += ".*";
      } else re += "[^/]*";
    } else if (c === "?") re += "[^/]";
    else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

/** Matches a `/`-separated path against a glob, anchored at the start unless the glob has no `/`. */
export class PathMatcher {
  private readonly segment: RegExp[] = [];
  private readonly suffix: RegExp[] = [];
  private readonly anchored: RegExp[] = [];

  constructor(globs: readonly string[]) {
    for (const g of globs) {
      if (!g.includes("/")) this.segment.push(globToRegExp(g));
      else if (g.startsWith("/")) this.anchored.push(globToRegExp(g));
      else this.suffix.push(globToRegExp(g));
    }
  }

  /** `rel` is workspace-relative; `abs` is the canonical absolute path. */
  matches(rel: string, abs: string): boolean {
    if (this.anchored.some((r) => r.test(abs))) return true;
    const parts = rel.split("/").filter(Boolean);
    if (this.segment.length && parts.some((p) => this.segment.some((r) => r.test(p)))) return true;
    if (!this.suffix.length) return false;
    // `.aws/credentials` matches that run of segments wherever it sits, and anything below it.
    for (let i = 0; i < parts.length; i++) {
      for (let j = i + 1; j <= parts.length; j++) {
        const run = parts.slice(i, j).join("/");
        if (this.suffix.some((r) => r.test(run))) return true;
      }
    }
    return false;
  }
}

/** Matches the whole relative path only (for policy rules: `src/**` must not match `x/src/a`). */
export function matchesRuleGlob(glob: string, rel: string, abs: string): boolean {
  return globToRegExp(glob).test(glob.startsWith("/") ? abs : rel);
}

/** Tool-name globs: `*` crosses dots, so `github.*` and `*` both work. */
export function toolGlobMatches(glob: string, name: string): boolean {
  const re = new RegExp(`^${glob.replace(/[.+^${}()|[\]\\?]/g, "\\$&").replace(/\*/g, ".*")}$`);
  return re.test(name);
}
