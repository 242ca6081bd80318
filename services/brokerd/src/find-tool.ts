import type { Logger } from "@boxmaker/common";
import { STOPWORDS, SYNONYM_GROUPS } from "./find-tool-synonyms.js";
import { schemaOverBounds } from "./schema-bounds.js";
import type { ToolDef, ToolTable } from "./tool-table.js";
import { stableStringify } from "./tools-array.js";

/** Splits names like `github.create_issue`, `readFile`, `list-dirs` into lowercase words. */
export function words(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 1 || /[0-9]/.test(w));
}

/**
 * Cheap stemming so "issues"/"issue", "reading"/"read", "created"/"create" and
 * "directories"/"directory" meet: suffixes off, a final e off, a doubled final
 * consonant ("runn") single.
 */
function stem(w: string): string {
  if (w.length > 4 && w.endsWith("ies")) return `${w.slice(0, -3)}y`;
  let s = w;
  if (s.length > 5 && s.endsWith("ing")) s = s.slice(0, -3);
  else if (s.length > 4 && s.endsWith("ed")) s = s.slice(0, -2);
  else if (s.length > 4 && s.endsWith("es") && !s.endsWith("ses")) s = s.slice(0, -2);
  else if (s.length > 3 && s.endsWith("s") && !s.endsWith("ss")) s = s.slice(0, -1);
  if (s.length > 4 && s.endsWith("e")) s = s.slice(0, -1);
  if (s.length > 3 && s !== w && s[s.length - 1] === s[s.length - 2] && !/[aeiouls]/.test(s[s.length - 1]!))
    s = s.slice(0, -1);
  return s;
}

/** stem → the synonym groups ("~3") it belongs to. */
const CONCEPTS = new Map<string, string[]>();
SYNONYM_GROUPS.forEach((g, i) => {
  for (const w of g) {
    const s = stem(w);
    const list = CONCEPTS.get(s) ?? [];
    if (!list.includes(`~${i}`)) list.push(`~${i}`);
    CONCEPTS.set(s, list);
  }
});

const FIELD_WEIGHT = { name: 3, param: 1.5, description: 1 } as const;
/** A synonym is a weaker signal than the word itself, a word's prefix weaker still. */
const SYNONYM = 0.6;
const PREFIX = 0.5;

function paramNames(schema: Record<string, unknown>): string[] {
  const props = schema.properties;
  return props && typeof props === "object" ? Object.keys(props) : [];
}

export interface Ranked {
  tool: ToolDef;
  score: number;
  /** The same tool (name, description, schema) offered by other servers too. */
  also?: string[];
}

/** A tool's name without its `server.` prefix. */
const bare = (name: string) => name.slice(name.indexOf(".") + 1);

/**
 * An inverted index over the extended tools: term → (tool, best field weight),
 * where terms are word stems and synonym groups. A query word scores, per
 * tool, the best of its exact stem, a synonym and a prefix, weighted by idf
 * so rare words ("jira") outrank common ones ("get"); tools matching more of
 * the query's words rank higher. Identical tools from several servers are
 * one entry.
 *
 * A tool whose schema is too deep or too big to print (schema-bounds.ts) is
 * left out and listed in `skipped`: printing and keying it recurse over the
 * schema, and one server's 2,000-deep schema must not break search for all.
 */
export class ToolIndex {
  private readonly tools: ToolDef[];
  private readonly also: string[][];
  private readonly postings = new Map<string, Map<number, number>>();
  private readonly vocab: string[];
  readonly skipped: Array<{ name: string; why: string }> = [];

  constructor(tools: readonly ToolDef[]) {
    const sorted = [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const byKey = new Map<string, number>();
    this.tools = [];
    this.also = [];
    for (const t of sorted) {
      const why = schemaOverBounds(t.parameters);
      if (why) {
        this.skipped.push({ name: t.name, why });
        continue;
      }
      const key = `${bare(t.name)}\0${t.description}\0${stableStringify(t.parameters)}`;
      const seen = byKey.get(key);
      if (seen !== undefined) {
        this.also[seen]!.push(t.name);
        continue;
      }
      byKey.set(key, this.tools.length);
      this.tools.push(t);
      this.also.push([]);
    }
    this.tools.forEach((t, i) => {
      const put = (term: string, weight: number) => {
        let m = this.postings.get(term);
        if (!m) {
          m = new Map();
          this.postings.set(term, m);
        }
        if ((m.get(i) ?? 0) < weight) m.set(i, weight);
      };
      const add = (text: string, weight: number) => {
        for (const w of words(text)) {
          const s = stem(w);
          put(s, weight);
          for (const c of CONCEPTS.get(s) ?? []) put(c, weight);
        }
      };
      add(t.description, FIELD_WEIGHT.description);
      for (const p of paramNames(t.parameters)) add(p, FIELD_WEIGHT.param);
      add(t.name, FIELD_WEIGHT.name);
    });
    this.vocab = [...this.postings.keys()].filter((v) => !v.startsWith("~"));
  }

  get size(): number {
    return this.tools.length;
  }

  search(query: string, limit: number): Ranked[] {
    const n = this.tools.length;
    const scores = new Map<number, number>();
    const matched = new Map<number, number>();
    const q = query.trim().toLowerCase();
    const exact = this.tools.findIndex((t) => t.name.toLowerCase() === q || bare(t.name).toLowerCase() === q);
    const idf = (df: number) => Math.log(1 + n / df);
    const all = words(query);
    const kept = all.filter((w) => !STOPWORDS.has(w));
    const terms = [...new Set((kept.length ? kept : all).map(stem))];
    for (const term of terms) {
      // Per tool, the best way this query word matches it.
      const best = new Map<number, number>();
      const offer = (m: Map<number, number> | undefined, factor: number) => {
        if (!m) return;
        const f = factor * idf(m.size);
        for (const [i, w] of m) if ((best.get(i) ?? 0) < w * f) best.set(i, w * f);
      };
      offer(this.postings.get(term), 1);
      for (const c of CONCEPTS.get(term) ?? []) offer(this.postings.get(c), SYNONYM);
      // Partial words ("repo" → "repository").
      if (term.length >= 3) {
        for (const v of this.vocab) {
          if (v === term || !(v.startsWith(term) || (v.length >= 3 && term.startsWith(v)))) continue;
          offer(this.postings.get(v), PREFIX);
        }
      }
      for (const [i, s] of best) {
        scores.set(i, (scores.get(i) ?? 0) + s);
        matched.set(i, (matched.get(i) ?? 0) + 1);
      }
    }
    // Covering more of the query counts: "list files in a directory" prefers a tool about both.
    for (const [i, s] of scores) scores.set(i, s * (0.5 + (0.5 * matched.get(i)!) / Math.max(1, terms.length)));
    if (exact >= 0) scores.set(exact, 100 + (scores.get(exact) ?? 0));
    return [...scores]
      .sort((a, b) => b[1] - a[1] || a[0] - b[0])
      .slice(0, limit)
      .map(([i, score]) => ({ tool: this.tools[i]!, score, ...(this.also[i]!.length ? { also: this.also[i] } : {}) }));
  }
}

/** find_tool's answer: full schemas and the exact call_tool shape, since the model can only call declared tools. */
export function formatFound(query: string, found: readonly Ranked[]): string {
  if (found.length === 0) {
    return `No tool matched "${query}". Try other words for the action and the object (e.g. "create issue", "read blob"), or use the tools you already have.`;
  }
  const lines = [
    `${found.length} tool${found.length > 1 ? "s" : ""} found. Use one through call_tool: call_tool({"name": "<name>", "arguments": {…}}).`,
  ];
  found.forEach(({ tool, also }, i) => {
    lines.push("", `${i + 1}. ${tool.name}: ${tool.description}`);
    if (also?.length) lines.push(`   (the same tool is also offered as ${also.join(", ")})`);
    lines.push(`   parameters: ${stableStringify(tool.parameters)}`);
  });
  return lines.join("\n");
}

/** The index over a table's extended tools, rebuilt only when the table changed (an MCP server came or went). */
export class ToolSearch {
  private index: ToolIndex | undefined;
  private version = -1;

  constructor(
    private readonly table: ToolTable,
    private readonly log?: Pick<Logger, "warn">,
  ) {}

  search(query: string, limit: number): Ranked[] {
    if (!this.index || this.version !== this.table.version) {
      this.index = new ToolIndex(this.table.extended());
      this.version = this.table.version;
      for (const s of this.index.skipped)
        this.log?.warn({ tool: s.name, why: s.why }, "tool left out of find_tool: its schema is too big to show");
    }
    return this.index.search(query, limit);
  }
}
