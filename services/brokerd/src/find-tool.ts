import type { ToolDef } from "./tool-table.js";
import { stableStringify } from "./tools-array.js";

/** Splits names like `github.create_issue`, `readFile`, `list-dirs` into lowercase words. */
export function words(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 1 || /[0-9]/.test(w));
}

/** Cheap stemming so "issues"/"issue" and "reading"/"read" meet. */
function stem(w: string): string {
  if (w.length > 5 && w.endsWith("ing")) return w.slice(0, -3);
  if (w.length > 4 && w.endsWith("es") && !w.endsWith("ses")) return w.slice(0, -2);
  if (w.length > 3 && w.endsWith("s") && !w.endsWith("ss")) return w.slice(0, -1);
  return w;
}

const FIELD_WEIGHT = { name: 3, param: 1.5, description: 1 } as const;

function paramNames(schema: Record<string, unknown>): string[] {
  const props = schema.properties;
  return props && typeof props === "object" ? Object.keys(props) : [];
}

export interface Ranked {
  tool: ToolDef;
  score: number;
}

/**
 * An inverted index over the extended tools: term → (tool, best field weight).
 * Scores are weight × idf summed over query terms, with a prefix match worth
 * half, so rare words ("jira") outrank common ones ("get").
 */
export class ToolIndex {
  private readonly tools: ToolDef[];
  private readonly postings = new Map<string, Map<number, number>>();
  private readonly vocab: string[];

  constructor(tools: readonly ToolDef[]) {
    this.tools = [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.tools.forEach((t, i) => {
      const add = (text: string, weight: number) => {
        for (const w of words(text).map(stem)) {
          let m = this.postings.get(w);
          if (!m) this.postings.set(w, (m = new Map()));
          if ((m.get(i) ?? 0) < weight) m.set(i, weight);
        }
      };
      add(t.description, FIELD_WEIGHT.description);
      for (const p of paramNames(t.parameters)) add(p, FIELD_WEIGHT.param);
      add(t.name, FIELD_WEIGHT.name);
    });
    this.vocab = [...this.postings.keys()];
  }

  get size(): number {
    return this.tools.length;
  }

  search(query: string, limit: number): Ranked[] {
    const n = this.tools.length;
    const scores = new Map<number, number>();
    const q = query.trim().toLowerCase();
    const exact = this.tools.findIndex((t) => t.name.toLowerCase() === q);
    if (exact >= 0) scores.set(exact, 100);
    const idf = (df: number) => Math.log(1 + n / df);
    for (const term of new Set(words(query).map(stem))) {
      const hit = this.postings.get(term);
      if (hit) for (const [i, w] of hit) scores.set(i, (scores.get(i) ?? 0) + w * idf(hit.size));
      // Partial words ("repo" → "repository") count for half, once per tool.
      if (term.length < 3) continue;
      const partial = new Map<number, number>();
      for (const v of this.vocab) {
        if (v === term || !(v.startsWith(term) || (v.length >= 3 && term.startsWith(v)))) continue;
        const m = this.postings.get(v)!;
        for (const [i, w] of m) partial.set(i, Math.max(partial.get(i) ?? 0, 0.5 * w * idf(m.size)));
      }
      for (const [i, s] of partial) scores.set(i, (scores.get(i) ?? 0) + s);
    }
    return [...scores]
      .sort((a, b) => b[1] - a[1] || a[0] - b[0])
      .slice(0, limit)
      .map(([i, score]) => ({ tool: this.tools[i]!, score }));
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
  found.forEach(({ tool }, i) => {
    lines.push("", `${i + 1}. ${tool.name}: ${tool.description}`, `   parameters: ${stableStringify(tool.parameters)}`);
  });
  return lines.join("\n");
}
