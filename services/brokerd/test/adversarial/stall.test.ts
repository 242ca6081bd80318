import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { BrokerService, createClient } from "@boxmaker/common";
import { tempDir } from "../../../../test/support/tmp.js";
import { LOOP_DELAY_PRELOAD, loopDelayOf } from "../../../../test/support/loop-delay.js";

/**
 * No single input stalls brokerd: a real brokerd process, with an
 * event-loop-delay monitor preloaded into it (test/support/loop-delay-report.mjs), is fed a
 * catastrophic schema pattern, a 2,000-deep schema, 2 MiB hostile HTML
 * pages through fetch_url and 30 concurrent grep_blob searches, all at
 * once, while BrokerStatus is polled; its worst event-loop delay over the
 * attack must stay under 250 ms.
 */
const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));
const MAIN = join(ROOT, "services/brokerd/dist/main.js");
const HOSTILE = fileURLToPath(new URL("./hostile-mcp-server.mjs", import.meta.url));
const MAX_STALL_MS = 250;
const MiB = 1024 * 1024;

const t = tempDir("bxs-");
const ws = join(t.dir, "ws");
let proc: ChildProcess;
let sock: string;
let http: Server;
let port = 0;

const pages: Record<string, string> = {
  "/a-open": "<a ".repeat((2 * MiB) / 3),
  "/a-open-256k": "<a ".repeat((256 * 1024) / 3),
  "/divs": "<div>".repeat((2 * MiB) / 5),
  "/comment": `<html><body><p>x</p><!--${"-".repeat(2 * MiB - 40)}`,
};

const loopDelay = () => loopDelayOf(proc, "brokerd", t.dir);

beforeAll(async () => {
  execFileSync("npx", ["tsc", "-b", "services/brokerd"], { cwd: ROOT, stdio: "inherit" });
  mkdirSync(ws);
  // Lines the catastrophic grep pattern backtracks on until the search's time limit.
  writeFileSync(join(ws, "big.log"), `${"a".repeat(40)}!\n`.repeat(Math.floor((7 * MiB) / 42)));
  http = createServer((req, res) => {
    const body = pages[req.url ?? ""];
    res.writeHead(body ? 200 : 404, { "content-type": "text/html" });
    res.end(body ?? "no");
  });
  http.listen(0, "127.0.0.1");
  await once(http, "listening");
  port = (http.address() as AddressInfo).port;
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
      limits: { search_timeout_ms: 1000 },
      // The local page server is on loopback: the operator allows that one host.
      fetch_url: { allow_private_hosts: ["127.0.0.1"], timeout_ms: 20_000 },
      policy: { rules: [{ tool: "fetch_url", effect: "allow", hosts: ["127.0.0.1"] }] },
      mcp_servers: {
        hostile: { transport: "stdio", command: process.execPath, args: [HOSTILE], sandbox: false, risk: "read" },
      },
    }),
  );
  proc = spawn(process.execPath, ["--import", LOOP_DELAY_PRELOAD, MAIN, "--config", config], {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, BX_LOOP_DELAY_DIR: t.dir },
  });
  const c = createClient(BrokerService, sock);
  for (let i = 0; i < 150; i++) {
    try {
      const found = await c.callTool(
        {
          sessionId: "warm",
          callId: `w${i}`,
          name: "find_tool",
          argumentsJson: JSON.stringify({ query: "echo text" }),
        },
        { timeoutMs: 2000 },
      );
      if (found.content.includes("hostile.echo")) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("brokerd did not start with the hostile MCP server's tools");
}, 90_000);

afterAll(async () => {
  if (proc && proc.exitCode === null) {
    proc.kill("SIGTERM");
    await once(proc, "exit");
  }
  http?.closeAllConnections();
  http?.close();
  t.cleanup();
});

describe("no single input stalls brokerd", () => {
  it(`keeps its event-loop delay under ${MAX_STALL_MS} ms while hostile schemas, pages and searches run`, async () => {
    const c = createClient(BrokerService, sock);
    let n = 0;
    const call = (name: string, args: unknown, session = "s") =>
      c.callTool(
        { sessionId: session, callId: `c${++n}`, name, argumentsJson: JSON.stringify(args) },
        { timeoutMs: 60_000 },
      );
    const via = (name: string, args: unknown) => call("call_tool", { name, arguments: args });

    // Disclosure first (find_tool), then the blob the searches read.
    for (const name of ["hostile.redos", "hostile.redos_keys", "hostile.lookahead", "fetch_url"])
      expect((await call("find_tool", { query: name })).content).toContain(name);
    const big = await call("read_file", { path: "big.log" });
    expect(big.blobSha256).toMatch(/^[0-9a-f]{64}$/);
    const blob = `blob:sha256:${big.blobSha256}`;
    await loopDelay(); // start the measurement here: brokerd's own start-up is not an input

    // Catastrophic for a backtracking engine: a's then one character that fails the match.
    const redosArg = fc.oneof(
      fc.integer({ min: 20, max: 40 }).map((k) => `${"a".repeat(k)}!`),
      fc.integer({ min: 1000, max: 100_000 }).map((k) => `${"a".repeat(k)}!`),
      fc.integer({ min: 1, max: 40 }).map((k) => "a".repeat(k)),
      fc.string({ maxLength: 40 }),
    );
    const redosInputs = fc.sample(redosArg, { numRuns: 40, seed: 23 });
    type Result = { kind: string; content: string; rule: string };
    type Job = [string, () => Promise<{ content: string; rule: string }>];
    const phase = async (kinds: Job[]) => {
      const latencies: number[] = [];
      let stop = false;
      const poll = (async () => {
        while (!stop) {
          const t0 = performance.now();
          await c.brokerStatus({}, { timeoutMs: 10_000 });
          latencies.push(performance.now() - t0);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      const results: Result[] = await Promise.all(
        kinds.map(([kind, f]) => f().then((r) => ({ kind, content: r.content, rule: r.rule }))),
      );
      stop = true;
      await poll;
      return { results, delay: await loopDelay(), polls: latencies.length };
    };
    const phases = {
      redos: await phase(
        redosInputs.flatMap(
          (s): Array<Job> => [
            ["redos", () => via("hostile.redos", { code: s })],
            ["redos-keys", () => via("hostile.redos_keys", { [s]: "x" })],
          ],
        ),
      ),
      deep: await phase([
        ...Array.from(
          { length: 10 },
          (_, i): Job => ["deep-find", () => call("find_tool", { query: i % 2 ? "nested document" : "echo text" })],
        ),
        ...Array.from({ length: 10 }, (): Job => ["deep-call", () => via("hostile.deep", { doc: {} })]),
        ...Array.from(
          { length: 5 },
          (): Job => [
            "deep-list",
            () =>
              c
                .searchTools({ query: "echo nested document", limit: 10, includePrompts: false })
                .then((l) => ({ content: l.matches.map((m) => m.name).join(" "), rule: "" })),
          ],
        ),
        ["lookahead", () => via("hostile.lookahead", { word: "abc" })],
      ]),
      html: await phase(
        Object.keys(pages).map(
          (path): Job => ["html", () => via("fetch_url", { url: `http://127.0.0.1:${port}${path}` })],
        ),
      ),
      grep: await phase(
        Array.from({ length: 30 }, (): Job => ["grep", () => via("grep_blob", { blob, pattern: "(a+)+$" })]),
      ),
    };
    const results = Object.values(phases).flatMap((p) => p.results);
    const byKind = new Map<string, Result[]>();
    for (const r of results) byKind.set(r.kind, [...(byKind.get(r.kind) ?? []), r]);
    for (const [name, p] of Object.entries(phases)) {
      console.log(
        `stall/${name}: ${p.results.length} calls; brokerd event-loop delay max ${p.delay.maxMs} ms, ` +
          `p99 ${p.delay.p99Ms} ms over ${p.delay.samples} samples; ${p.polls} BrokerStatus answered meanwhile`,
      );
    }

    // Every call was answered, and each the way its input deserves.
    // RE2 answers as JavaScript would: the code matches exactly when it is all a's.
    redosInputs.forEach((s, i) => {
      const r = byKind.get("redos")![i]!;
      expect(r.content).toMatch(/^a+$/.test(s) ? /redos ran/ : /code: must match pattern/);
    });
    redosInputs.forEach((s, i) => {
      const r = byKind.get("redos-keys")![i]!;
      expect(r.content).toMatch(/^a+$/.test(s) ? /must be number/ : /redos_keys ran/);
    });
    expect(byKind.get("lookahead")![0]!.content).toMatch(/not a regular expression brokerd can check in linear time/);
    for (const r of byKind.get("deep-find")!) expect(r.content).not.toMatch(/call stack|internal/i);
    expect(byKind.get("deep-find")!.some((r) => r.content.includes("hostile.echo"))).toBe(true);
    for (const r of byKind.get("deep-call")!)
      expect(r.content).toMatch(/has not been looked up|too big to check|no tool named "hostile.deep"/);
    for (const l of byKind.get("deep-list")!) expect(l.content.split(" ")).toContain("hostile.echo");
    for (const l of byKind.get("deep-list")!) expect(l.content.split(" ")).not.toContain("hostile.deep");
    for (const r of byKind.get("html")!) expect(r.content).toMatch(/HTTP 200, text\/html/);
    // The busy refusal comes from execute, where a refusal is the call's text (no rule).
    const grep = byKind.get("grep")!;
    const busy = grep.filter((r) => /grep_blob searches are running and \d+ are waiting/.test(r.content));
    const ran = grep.filter((r) => !busy.includes(r));
    expect(ran.length).toBeGreaterThanOrEqual(9);
    expect(busy.length).toBeGreaterThanOrEqual(1);
    for (const r of ran) expect(r.content).toMatch(/ran past 1000 ms/);
    console.log(`stall/grep: ${ran.length} searches ran (each to its time limit), ${busy.length} refused as busy`);

    for (const p of Object.values(phases)) {
      expect(p.delay.samples).toBeGreaterThan(3);
      expect(p.delay.maxMs).toBeLessThan(MAX_STALL_MS);
    }
  }, 120_000);
});
