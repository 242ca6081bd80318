// CLI start-up: how long `boxmaker --help` and `boxmaker status` take as
// processes, the latter against a real stack (the built simulator and the
// three built daemons on Unix sockets). Target: status p50 < 150 ms.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CLI_NODE_FLAGS } from "@boxmaker/common/lite";
import { nowMs, p50, p99 } from "./stats.mjs";

export const timeLimitS = 90;

const root = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const cli = join(root, "services", "cli", "dist", "bundle", "boxmaker.js");
const RUNS = 15;

async function startStack(dir) {
  const { startLlamaSim } = await import(join(root, "test", "llama-sim", "dist", "index.js"));
  const run = join(dir, "run");
  const ws = join(dir, "ws");
  mkdirSync(run, { recursive: true });
  mkdirSync(ws, { recursive: true });
  const sock = (n) => join(run, `${n}.sock`);
  const sim = await startLlamaSim({ socketPath: sock("llama") });
  const configs = {
    inferproxy: {
      socket: sock("inferproxy"),
      upstream: { socket_path: sock("llama") },
      contract: sim.contract,
      health_poll_ms: 200,
      log_level: "warn",
    },
    brokerd: {
      socket: sock("brokerd"),
      state_dir: join(dir, "broker"),
      workspace_roots: [ws],
      sandbox: { mode: "none", allow_unsandboxed: true },
      log_level: "error",
    },
    loopd: {
      socket: sock("loopd"),
      state_dir: join(dir, "loopd"),
      inferproxy_socket: sock("inferproxy"),
      brokerd_socket: sock("brokerd"),
      log_level: "warn",
    },
  };
  const procs = [];
  for (const name of ["inferproxy", "brokerd", "loopd"]) {
    const cfg = join(dir, `${name}.json`);
    writeFileSync(cfg, JSON.stringify(configs[name]));
    const p = spawn(process.execPath, [join(root, "services", name, "dist", "main.js"), "--config", cfg], {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, NOTIFY_SOCKET: "" },
    });
    procs.push(p);
    const deadline = Date.now() + 15_000;
    while (!existsSync(configs[name].socket)) {
      if (p.exitCode !== null || Date.now() > deadline) throw new Error(`${name} did not start`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  return {
    socket: sock("loopd"),
    async stop() {
      const exits = procs.filter((p) => p.exitCode === null).map((p) => new Promise((r) => p.once("exit", r)));
      for (const p of procs) p.kill("SIGTERM");
      await Promise.all(exits);
      await sim.close();
    },
  };
}

/**
 * Wall time of a whole CLI process, from spawn to exit. Asynchronous on
 * purpose: the simulator lives in this process and must keep answering.
 */
async function time(args, env) {
  const t0 = nowMs();
  // As the launcher's #! line runs it: with the CLI's Node flags.
  const p = spawn(process.execPath, [...CLI_NODE_FLAGS, cli, ...args], {
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  p.stdout.on("data", (b) => (out += b));
  p.stderr.on("data", (b) => (out += b));
  const [code] = await once(p, "exit");
  const ms = nowMs() - t0;
  if (code !== 0) throw new Error(`boxmaker ${args.join(" ")} exited ${code}: ${out}`);
  return ms;
}

export default async function (emit) {
  const help = [];
  await time(["--help"]); // warm the file cache
  for (let i = 0; i < RUNS; i++) help.push(await time(["--help"]));
  emit("help_ms_p50", p50(help), "ms");
  emit("help_ms_p99", p99(help), "ms");

  const dir = mkdtempSync(join(tmpdir(), "bxb-"));
  const stack = await startStack(dir);
  try {
    const env = { BOXMAKER_SOCKET: stack.socket };
    // The first status waits for inferproxy's self-test; only then is it the steady state.
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        await time(["status"], env);
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const status = [];
    for (let i = 0; i < RUNS; i++) status.push(await time(["status"], env));
    emit("status_ms_p50", p50(status), "ms");
    emit("status_ms_p99", p99(status), "ms");
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
