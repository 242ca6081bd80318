#!/usr/bin/env node
// Runs every benchmark in test/bench/*.bench.{mjs,ts} against the built code
// (TypeScript benches load through tsx so they can share test/support).
// `npm run bench` prints a table; `npm run bench -- --json` prints one JSON
// object per line: {"bench","metric","value","unit"}. `-- NAME` runs one bench.
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const json = args.includes("--json");
const only = args.filter((a) => !a.startsWith("--"));

const benchName = (f) => f.replace(/\.bench\.(mjs|ts)$/, "");
const files = readdirSync(here)
  .filter((f) => /\.bench\.(mjs|ts)$/.test(f))
  .sort()
  .filter((f) => only.length === 0 || only.includes(benchName(f)));
const load = async (f) => {
  const url = pathToFileURL(join(here, f)).href;
  if (!f.endsWith(".ts")) return import(url);
  const { tsImport } = await import("tsx/esm/api");
  return tsImport(url, import.meta.url);
};

const rows = [];
let failed = 0;
for (const f of files) {
  const bench = benchName(f);
  const mod = await load(f);
  const emit = (metric, value, unit) => {
    const row = { bench, metric, value: Number(value.toFixed ? value.toFixed(4) : value), unit };
    rows.push(row);
    if (json) process.stdout.write(`${JSON.stringify(row)}\n`);
  };
  try {
    if (!json) process.stderr.write(`running ${bench}…\n`);
    await mod.default(emit);
  } catch (err) {
    failed++;
    process.stderr.write(`bench ${bench} failed: ${err?.stack ?? err}\n`);
  }
}

if (!json) {
  const w = (k) => Math.max(k.length, ...rows.map((r) => String(r[k]).length));
  const cols = ["bench", "metric", "value", "unit"];
  const widths = Object.fromEntries(cols.map((c) => [c, w(c)]));
  const line = (r) => cols.map((c) => String(r[c]).padEnd(widths[c])).join("  ");
  console.log(line(Object.fromEntries(cols.map((c) => [c, c]))));
  console.log(cols.map((c) => "-".repeat(widths[c])).join("  "));
  for (const r of rows) console.log(line(r));
}
process.exit(failed ? 1 : 0);
