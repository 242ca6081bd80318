// For the architecture checks that read the tree's own source as text
// (services/common/test/one-grpc.test.ts, one-error-model.test.ts): every
// source file under a folder, and which of a set of named patterns a text has.
import { readdirSync } from "node:fs";
import { join } from "node:path";

// Generated code (src/gen), build output and dependencies are not the code under check.
const SKIP_DIRS = new Set(["node_modules", "dist", "gen", ".git"]);
const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;

export function* sourceFiles(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) yield* sourceFiles(join(dir, e.name));
    } else if (SOURCE.test(e.name)) yield join(dir, e.name);
  }
}

/** The names of the patterns `text` matches, in the table's order. */
export function patternFindings(patterns: Record<string, RegExp>): (text: string) => string[] {
  return (text) =>
    Object.entries(patterns)
      .filter(([, re]) => re.test(text))
      .map(([what]) => what);
}
