import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { closeSync, ftruncateSync, mkdirSync, openSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BrokerService, createClient } from "@boxmaker/common";
import { tempDir } from "../../../../test/support/tmp.js";

/**
 * brokerd as a real process on its socket keeps answering BrokerStatus while
 * hostile calls run: FIFOs, a 2 GB ranged read, catastrophic regexes and globs,
 * deep paths, a huge rewrite's diff.
 */
const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));
const MAIN = join(ROOT, "services/brokerd/dist/main.js");
const t = tempDir("bxl-");
const ws = join(t.dir, "ws");
let proc: ChildProcess;
let sock: string;

beforeAll(async () => {
  execFileSync("npx", ["tsc", "-b", "services/brokerd"], { cwd: ROOT, stdio: "inherit" });
  mkdirSync(ws);
  execFileSync("mkfifo", [join(ws, "pipe")]);
  const fd = openSync(join(ws, "huge.txt"), "w");
  writeSync(fd, Buffer.alloc(1024 * 1024, "a"));
  ftruncateSync(fd, 2 * 1024 * 1024 * 1024);
  closeSync(fd);
  writeFileSync(join(ws, "big.txt"), Array.from({ length: 8000 }, (_, i) => `line ${i}`).join("\n"));
  for (let i = 0; i < 50; i++) writeFileSync(join(ws, `${"a".repeat(100)}${i}.txt`), `${"a".repeat(5000)}\n`);
  sock = join(t.dir, "b.sock");
  const config = join(t.dir, "b.json");
  writeFileSync(
    config,
    JSON.stringify({
      socket: sock,
      state_dir: join(t.dir, "state"),
      workspace_roots: [ws],
      log_level: "error",
      sandbox: { mode: "none" },
      limits: { search_timeout_ms: 1500 },
    }),
  );
  proc = spawn(process.execPath, [MAIN, "--config", config], { stdio: ["ignore", "ignore", "inherit"] });
  const c = createClient(BrokerService, sock);
  for (let i = 0; i < 100; i++) {
    try {
      await c.brokerStatus({}, { timeoutMs: 500 });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error("brokerd did not start");
}, 60_000);

afterAll(async () => {
  if (proc && proc.exitCode === null) {
    proc.kill("SIGTERM");
    await new Promise((r) => proc.once("exit", r));
  }
  t.cleanup();
});

describe("brokerd keeps answering while hostile calls run", () => {
  it("BrokerStatus stays fast during FIFO, 2 GB, regex, glob, deep-path and diff attacks, and SIGTERM still stops it", async () => {
    const c = createClient(BrokerService, sock);
    let n = 0;
    const attacks: Array<[string, unknown]> = [
      ["read_file", { path: "pipe" }],
      ["read_file", { path: "pipe", start_line: 1, end_line: 3 }],
      ["write_file", { path: "pipe", content: "x" }],
      ["read_file", { path: "huge.txt", start_line: 2, end_line: 3 }],
      ["search_files", { pattern: "(a+)+$", glob: "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b" }],
      ["search_files", { pattern: "(a|aa)*c" }],
      ["list_dir", { path: "a/".repeat(2000) }],
      ["write_file", { path: "big.txt", content: Array.from({ length: 8000 }, (_, i) => `other ${i * 3}`).join("\n") }],
    ];
    const latencies: number[] = [];
    let stop = false;
    const poll = (async () => {
      while (!stop) {
        const t0 = performance.now();
        await c.brokerStatus({}, { timeoutMs: 5000 });
        latencies.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const results = await Promise.all(
      attacks.map(([name, args]) =>
        c.callTool(
          { sessionId: "s", callId: `a${++n}`, name, argumentsJson: JSON.stringify(args) },
          { timeoutMs: 30_000 },
        ),
      ),
    );
    stop = true;
    await poll;
    expect(results.every((r) => typeof r.content === "string")).toBe(true);
    expect(latencies.length).toBeGreaterThan(3);
    expect(Math.max(...latencies)).toBeLessThan(1000);
    proc.kill("SIGTERM");
    const code = await new Promise((r) => proc.once("exit", (c) => r(c)));
    expect(code).toBe(0);
  }, 60_000);
});
