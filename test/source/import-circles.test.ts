import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * No module of a daemon or the CLI imports, through any chain, a module that imports it.
 * A circle means two modules are one concept in two files (or a type lives in the wrong
 * one), and its load order decides which sees the other half-initialised. Type-only
 * imports count too: the circle in the design is the same. What `madge --circular` finds,
 * without the dependency.
 */
const REPO = fileURLToPath(new URL("../../", import.meta.url));
const SERVICES = ["common", "inferproxy", "loopd", "brokerd", "cli"];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}

/** The relative modules a file names in `import … from`, `export … from`, a bare `import "…"` or `import("…")`. */
function relativeImports(file: string, text: string): string[] {
  const specs = [
    ...text.matchAll(/\b(?:import|export)\b[^;"'`]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']/g),
    ...text.matchAll(/\bimport\s*["'](\.{1,2}\/[^"']+)["']/g),
    ...text.matchAll(/\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g),
  ].map((m) => m[1]!);
  return specs.map((s) => resolve(dirname(file), s.replace(/\.js$/, ".ts")));
}

/** One circle in the graph, as the files along it, or undefined when there is none. */
function findCircle(graph: ReadonlyMap<string, readonly string[]>): string[] | undefined {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (n: string): string[] | undefined => {
    state.set(n, "open");
    path.push(n);
    for (const next of graph.get(n) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === "open") return [...path.slice(path.indexOf(next)), next];
      if (state.get(next) === undefined) {
        const found = visit(next);
        if (found) return found;
      }
    }
    path.pop();
    state.set(n, "done");
    return undefined;
  };
  for (const n of graph.keys()) {
    if (state.get(n) !== undefined) continue;
    const found = visit(n);
    if (found) return found;
  }
  return undefined;
}

describe("import circles", () => {
  it("the finder sees a circle through a type import, and none in a chain", () => {
    const a = "/s/a.ts";
    const b = "/s/sub/b.ts";
    const text = {
      [a]: 'import { x } from "./sub/b.js";\nexport const y = 1;',
      [b]: 'import type {\n  Y,\n} from "../a.js";\nexport const x = 2;',
    };
    const graph = new Map(Object.entries(text).map(([f, t]) => [f, relativeImports(f, t)]));
    expect(findCircle(graph)).toEqual([a, b, a]);
    graph.set(b, []);
    expect(findCircle(graph)).toBeUndefined();
  });

  for (const service of SERVICES) {
    it(`services/${service}/src has none`, () => {
      const root = join(REPO, "services", service, "src");
      const files = sources(root);
      const graph = new Map(files.map((f) => [f, relativeImports(f, readFileSync(f, "utf8"))]));
      const circle = findCircle(graph)?.map((f) => relative(root, f));
      expect(circle, circle?.join(" > ")).toBeUndefined();
      // The scan reads real imports: a service's modules do import each other.
      expect([...graph.values()].some((deps) => deps.some((d) => graph.has(d)))).toBe(true);
    });
  }
});
