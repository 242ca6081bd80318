#!/usr/bin/env node
// Runs every benchmark in test/bench/*.bench.{mjs,ts} against the built code,
// one at a time, each in a process group of its own (run-one.mjs) and under
// its own time limit (the module's `timeLimitS`, `soakTimeLimitS` with
// --soak): a bench past it is killed with everything it started, reported as
// failed, and the run goes on. A bench that crashes or exits without finishing
// is failed the same way; one whose requirement is missing is skipped.
//   npm run bench                  a table of every metric, then each bench's time
//   npm run bench -- --json        one JSON document (below) on stdout
//   npm run bench -- NAME…         only those benches
//   npm run bench:soak             the long forms (--soak)
// Progress and the benches' own output go to stderr, so --json's stdout is the
// document alone. Exit status 1 when any bench failed.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
// For a bench that states no limit: long enough for any quick bench on a loaded machine.
const DEFAULT_LIMIT_S = 120;
// SIGTERM first so daemons close their sockets and servers their slots; SIGKILL for what stays.
const KILL_GRACE_MS = 5000;

const args = process.argv.slice(2);
const json = args.includes("--json");
const soak = args.includes("--soak");
// --dir lets the runner's own test point it at benches written for the test.
const dirArg = args.find((a) => a.startsWith("--dir="));
const benchDir = dirArg ? resolve(dirArg.slice("--dir=".length)) : here;
const unknownFlag = args.find((a) => a.startsWith("--") && a !== "--json" && a !== "--soak" && a !== dirArg);
if (unknownFlag) fail(`unknown option ${unknownFlag} (known: --json, --soak)`);
const only = args.filter((a) => !a.startsWith("--"));

const benchName = (f) => f.replace(/\.bench\.(mjs|ts)$/, "");
const all = readdirSync(benchDir)
  .filter((f) => /\.bench\.(mjs|ts)$/.test(f))
  .sort();
const missing = only.filter((n) => !all.some((f) => benchName(f) === n));
if (missing.length) fail(`no bench named ${missing.join(", ")} (there are: ${all.map(benchName).join(", ")})`);
const files = all.filter((f) => only.length === 0 || only.includes(benchName(f)));

function fail(message) {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}

let current;
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => {
    // The bench's group is not ours: without this, an interrupted run would leave its daemons running.
    if (current) killGroup(current, "SIGKILL");
    process.exit(130);
  });
}

function killGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

/** Runs one bench to its end or its limit; never rejects. */
function runBench(file) {
  const bench = benchName(file);
  // The bench's temporary files go here, so that what a killed bench could not clean up is removed.
  const tmp = mkdtempSync(join(tmpdir(), "bxr-"));
  const started = performance.now();
  const result = { bench, status: "failed", duration_s: 0, time_limit_s: DEFAULT_LIMIT_S, metrics: {} };
  return new Promise((done) => {
    const child = spawn(
      process.execPath,
      [join(here, "run-one.mjs"), join(benchDir, file), ...(soak ? ["--soak"] : [])],
      {
        detached: true,
        stdio: ["ignore", "pipe", "inherit", "ipc"],
        env: { ...process.env, TMPDIR: tmp },
      },
    );
    current = child;
    child.stdout.pipe(process.stderr, { end: false });
    let reported = false;
    let timedOut = false;
    let timer;
    const arm = () => {
      clearTimeout(timer);
      const left = result.time_limit_s * 1000 - (performance.now() - started);
      timer = setTimeout(
        () => {
          timedOut = true;
          killGroup(child, "SIGTERM");
          setTimeout(() => killGroup(child, "SIGKILL"), KILL_GRACE_MS).unref();
        },
        Math.max(0, left),
      );
    };
    arm();
    child.on("message", (m) => {
      if (m.t === "limit") {
        result.time_limit_s = m.s;
        arm();
      } else if (m.t === "metric") {
        result.metrics[m.metric] = { value: m.value, unit: m.unit };
      } else if (m.t === "done") {
        reported = true;
        result.status = "ok";
      } else if (m.t === "skipped") {
        reported = true;
        result.status = "skipped";
        result.reason = m.reason;
      } else if (m.t === "error") {
        reported = true;
        result.error = m.message;
      }
    });
    let exit;
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      clearTimeout(timer);
      // Whatever the bench left running (a daemon it did not stop) goes with it.
      killGroup(child, "SIGKILL");
      // 'close' follows once the pipes are closed; a grandchild outside the group could hold them.
      setTimeout(() => child.stdout.destroy(), 10_000).unref();
    });
    child.on("close", () => {
      current = undefined;
      result.duration_s = round((performance.now() - started) / 1000);
      if (timedOut) {
        result.status = "failed";
        result.error = `exceeded its time limit of ${result.time_limit_s} s and was killed`;
      } else if (!reported) {
        result.error = `exited (${exit?.signal ? `signal ${exit.signal}` : `code ${exit?.code}`}) before finishing`;
      }
      rmSync(tmp, { recursive: true, force: true });
      done(result);
    });
  });
}

const round = (x) => Math.round(x * 100) / 100;

const t0 = performance.now();
const results = [];
for (const f of files) {
  process.stderr.write(`running ${benchName(f)}…\n`);
  const r = await runBench(f);
  results.push(r);
  if (r.status === "failed") process.stderr.write(`bench ${r.bench} FAILED after ${r.duration_s} s: ${r.error}\n`);
  else if (r.status === "skipped") process.stderr.write(`bench ${r.bench} skipped: ${r.reason}\n`);
  else process.stderr.write(`bench ${r.bench} ok in ${r.duration_s} s\n`);
}
const total = round((performance.now() - t0) / 1000);
const failed = results.filter((r) => r.status === "failed").map((r) => r.bench);

if (json) {
  const flat = {};
  for (const r of results) for (const [m, v] of Object.entries(r.metrics)) flat[`${r.bench}.${m}`] = v;
  const doc = { soak, total_s: total, failed, benches: results, metrics: flat };
  process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
} else {
  const rows = results.flatMap((r) =>
    Object.entries(r.metrics).map(([metric, v]) => ({ bench: r.bench, metric, ...v })),
  );
  table(rows, ["bench", "metric", "value", "unit"]);
  console.log("");
  table(
    results.map((r) => ({ bench: r.bench, status: r.status, seconds: r.duration_s, limit: r.time_limit_s })),
    ["bench", "status", "seconds", "limit"],
  );
  console.log(`total ${total} s${failed.length ? `; failed: ${failed.join(", ")}` : ""}`);
}
process.exitCode = failed.length ? 1 : 0;
if (failed.length) process.stderr.write(`bench: ${failed.length} failed: ${failed.join(", ")}\n`);

function table(rows, cols) {
  const widths = Object.fromEntries(cols.map((c) => [c, Math.max(c.length, ...rows.map((r) => String(r[c]).length))]));
  const line = (r) => cols.map((c) => String(r[c]).padEnd(widths[c])).join("  ");
  console.log(line(Object.fromEntries(cols.map((c) => [c, c]))));
  console.log(cols.map((c) => "-".repeat(widths[c])).join("  "));
  for (const r of rows) console.log(line(r));
}
