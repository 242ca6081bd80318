// brokerd as a process with MCP servers: its socket, once it appears, answers;
// and SIGTERM leaves no server running, even one being stopped that ignores SIGTERM.
import { BrokerService, createClient } from "@boxmaker/common";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, readFileSync, watch, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { alive, processesMentioning } from "../../../test/support/processes.js";
import { tempDir } from "../../../test/support/tmp.js";
import { EVERYTHING, node, useMcpRig } from "./mcp-real-support.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const MAIN = join(ROOT, "services/brokerd/dist/main.js");
const HOSTILE = fileURLToPath(new URL("./fixtures/mcp-hostile-server.mjs", import.meta.url));

const t = tempDir("bxm-");
const ws = join(t.dir, "ws");
const procs: ChildProcess[] = [];
beforeAll(() => {
  // The daemon runs from dist: tsc -b is incremental, so this is cheap when up to date.
  execFileSync("npx", ["tsc", "-b", "services/brokerd"], { cwd: ROOT, stdio: "inherit" });
  mkdirSync(ws);
});
afterEach(() => {
  for (const p of procs.splice(0)) p.kill("SIGKILL");
  // A server a failed run left behind (its log path is unique to this file's temp dir).
  for (const pid of processesMentioning(t.dir)) process.kill(pid, "SIGKILL");
});
afterAll(() => t.cleanup());

/** Running, not a zombie nobody reaped yet (a container's pid 1 may never reap). */
function running(pid: number): boolean {
  if (!alive(pid)) return false;
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** brokerd from dist with these servers; its socket in `dir` (made here unless the test made and watches it). */
function startBrokerd(name: string, mcpServers: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const dir = join(t.dir, name);
  mkdirSync(dir, { recursive: true });
  const config = join(t.dir, `${name}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      socket: join(dir, "b.sock"),
      state_dir: join(t.dir, `${name}-state`),
      workspace_roots: [ws],
      log_level: "warn",
      sandbox: { mode: "none" },
      mcp_servers: mcpServers,
      ...extra,
    }),
  );
  const proc = spawn(node, [MAIN, "--config", config], { stdio: ["ignore", "ignore", "pipe"] });
  procs.push(proc);
  let err = "";
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  return { proc, stderr: () => err };
}

describe("brokerd's socket, the moment it appears", () => {
  it("answers BrokerStatus at once, in every start: the path appears once, only when the daemon serves it", async () => {
    for (let i = 0; i < 5; i++) {
      // Watched before brokerd starts, so no appearance of the path is missed.
      const dir = join(t.dir, `s${i}`);
      const sock = join(dir, "b.sock");
      mkdirSync(dir);
      const seen: string[] = [];
      let first: Promise<number> | undefined;
      const watcher = watch(dir, (kind, file) => {
        if (file !== "b.sock") return;
        seen.push(kind);
        if (!first && existsSync(sock)) {
          first = createClient(BrokerService, sock)
            .brokerStatus({}, { timeoutMs: 5000 })
            .then((st) => st.coreTools);
          first.catch(() => undefined);
        }
      });
      const b = startBrokerd(`s${i}`, {
        ev: { transport: "stdio", command: node, args: [EVERYTHING, "stdio"], sandbox: false },
      });
      await vi.waitFor(() => expect(first).toBeDefined(), { timeout: 20_000, interval: 5 });
      expect(await first!).toBeGreaterThan(0);
      watcher.close();
      // Created once (grpc-js's bind); a probe listening there first would add a create and a delete.
      expect(seen.filter((e) => e === "rename")).toEqual(["rename"]);
      b.proc.kill("SIGTERM");
      await once(b.proc, "exit");
      expect(b.proc.exitCode, b.stderr()).toBe(0);
    }
  }, 120_000);
});

/** A server that never answers initialize and ignores SIGTERM; its log says when it was asked to stop. */
const stuck = (log: string) => ({
  stuck: {
    transport: "stdio",
    command: node,
    args: [HOSTILE, "--hang-init", "--ignore-term", "--log", log],
    sandbox: false,
    connect_timeout_ms: 300,
  },
});
const events = (log: string) =>
  existsSync(log)
    ? readFileSync(log, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { event: string; pid: number })
    : [];
/** Waits until the server has had SIGTERM (brokerd is stopping it after the failed connect); its pid. */
async function termed(log: string): Promise<number> {
  return vi.waitFor(
    () => {
      const e = events(log);
      expect(e.map((x) => x.event)).toContain("term");
      return e.find((x) => x.event === "start")!.pid;
    },
    { timeout: 20_000, interval: 10 },
  );
}

describe("shutdown while a server that ignores SIGTERM is being stopped", () => {
  const m = useMcpRig();

  it("Broker.close waits for the stop under way and the server is gone when it returns", async () => {
    const log = join(t.dir, "inproc.jsonl");
    await m.start({ mcp_servers: stuck(log), mcp_reconnect: { initial_ms: 60_000, max_ms: 60_000 } });
    const pid = await termed(log);
    expect(running(pid)).toBe(true);
    await m.r.broker.close();
    expect(running(pid)).toBe(false);
  });

  it("SIGTERM to brokerd: it exits 0 and the server is dead by then", async () => {
    const log = join(t.dir, "proc.jsonl");
    const b = startBrokerd("term", stuck(log), { mcp_reconnect: { initial_ms: 60_000, max_ms: 60_000 } });
    const pid = await termed(log);
    expect(running(pid)).toBe(true);
    b.proc.kill("SIGTERM");
    await once(b.proc, "exit");
    expect(b.proc.exitCode, b.stderr()).toBe(0);
    expect(running(pid)).toBe(false);
  });
});
