// vitest globalSetup: collects the skip lines that requires() writes from every
// worker and prints them once, at the end of the run, so a local run on a
// machine without bwrap or tmux says plainly what it did not test.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), "bx-skips-"));
  const file = join(dir, "skips.txt");
  project.provide("boxmakerSkipsFile", file);
  return () => {
    let lines: string[] = [];
    try {
      lines = [...new Set(readFileSync(file, "utf8").split("\n").filter(Boolean))].sort();
    } catch {
      // no skips were written
    }
    rmSync(dir, { recursive: true, force: true });
    if (lines.length === 0) return;
    const out = [
      `\nSkipped for missing tools (${lines.length}); install them to run everything:`,
      ...lines.map((l) => `  - ${l}`),
      "",
    ];
    process.stdout.write(`${out.join("\n")}\n`);
  };
}
