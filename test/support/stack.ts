import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, writeFileSync, existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startLlamaSim, type LlamaSim, type LlamaSimOptions } from "@boxmaker/llama-sim";
import { CLI_NODE_FLAGS, DAEMON_NODE_FLAGS } from "@boxmaker/common";

export const repoRoot = resolve(fileURLToPath(new URL("../..", import.meta.url)));
export const daemonMain = (name: "inferproxy" | "brokerd" | "loopd") =>
  join(repoRoot, "services", name, "dist", "main.js");
/** The CLI as users run it: the bundle `npm run build` makes. */
export const cliMain = join(repoRoot, "services", "cli", "dist", "bundle", "boxmaker.js");
/** Node's arguments for running the CLI as its launcher's #! line does: the CLI's Node flags, then the launcher. */
export const cliArgv = (args: string[]) => [...CLI_NODE_FLAGS, cliMain, ...args];

export interface DaemonProc {
  name: string;
  proc: ChildProcess;
  socket: string;
  configPath: string;
  stderr: string[];
}

export interface StackOptions {
  sim?: LlamaSimOptions;
  /**
   * A llama-server that is already running (the real-server tier): no simulator
   * is started and inferproxy is pointed at this socket with this contract.
   */
  upstream?: { socketPath: string; contract: { template_sha256: string; n_ctx_per_slot: number; total_slots: number } };
  inferproxy?: Record<string, unknown>;
  brokerd?: Record<string, unknown>;
  loopd?: Record<string, unknown>;
  /** Node flags for every daemon after the production ones (e.g. a `--require` that reports on them). */
  nodeArgs?: string[];
}

/**
 * The whole system for a test: the simulator in-process as llama-server,
 * and the three daemons as real child processes on Unix sockets in `dir`.
 */
export class Stack {
  /** The simulator; not started when the stack runs against a real llama-server (`upstream`). */
  sim!: LlamaSim;
  readonly daemons = new Map<string, DaemonProc>();
  readonly workspace: string;
  readonly sockets: { llama: string; inferproxy: string; brokerd: string; loopd: string };
  readonly configs: Record<string, Record<string, unknown>> = {};

  constructor(
    readonly dir: string,
    private readonly opts: StackOptions = {},
  ) {
    this.workspace = join(dir, "ws");
    mkdirSync(this.workspace, { recursive: true });
    const run = join(dir, "run");
    mkdirSync(run, { recursive: true });
    this.sockets = {
      llama: join(run, "llama.sock"),
      inferproxy: join(run, "inferproxy.sock"),
      brokerd: join(run, "brokerd.sock"),
      loopd: join(run, "loopd.sock"),
    };
  }

  async start(): Promise<this> {
    const upstream = this.opts.upstream;
    if (upstream) {
      this.sockets.llama = upstream.socketPath;
    } else {
      this.sim = await startLlamaSim({
        socketPath: this.sockets.llama,
        slotSavePath: join(this.dir, "slots"),
        ...this.opts.sim,
      });
      mkdirSync(join(this.dir, "slots"), { recursive: true });
    }
    this.configs.inferproxy = {
      socket: this.sockets.inferproxy,
      upstream: { socket_path: this.sockets.llama },
      contract: upstream?.contract ?? this.sim.contract,
      health_poll_ms: 200,
      // The simulator's slot-save directory, as `boxmaker up` sets it (never the production default).
      slot_files: { dir: upstream ? "" : join(this.dir, "slots") },
      log_level: "warn",
      ...this.opts.inferproxy,
    };
    this.configs.brokerd = {
      socket: this.sockets.brokerd,
      state_dir: join(this.dir, "state", "broker"),
      workspace_roots: [this.workspace],
      sandbox: { mode: "none", allow_unsandboxed: true },
      log_level: "warn",
      ...this.opts.brokerd,
    };
    this.configs.loopd = {
      socket: this.sockets.loopd,
      state_dir: join(this.dir, "state", "loopd"),
      inferproxy_socket: this.sockets.inferproxy,
      brokerd_socket: this.sockets.brokerd,
      project_instructions: { workspace: this.workspace },
      log_level: "warn",
      ...this.opts.loopd,
    };
    await Promise.all([this.startDaemon("inferproxy"), this.startDaemon("brokerd")]);
    await this.startDaemon("loopd");
    return this;
  }

  /** Starts (or restarts) one daemon and waits until its socket exists. */
  async startDaemon(name: "inferproxy" | "brokerd" | "loopd"): Promise<DaemonProc> {
    const configPath = join(this.dir, `${name}.json`);
    writeFileSync(configPath, JSON.stringify(this.configs[name], null, 2));
    // The production flags, then BOXMAKER_DAEMON_NODE_ARGS ("--cpu-prof --cpu-prof-dir=/tmp/prof"
    // profiles the daemons under a test or bench).
    const nodeArgs = [
      ...DAEMON_NODE_FLAGS,
      ...(this.opts.nodeArgs ?? []),
      ...(process.env.BOXMAKER_DAEMON_NODE_ARGS?.split(" ").filter(Boolean) ?? []),
    ];
    const proc = spawn(process.execPath, [...nodeArgs, daemonMain(name), "--config", configPath], {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, NOTIFY_SOCKET: "" },
    });
    const d: DaemonProc = { name, proc, socket: this.sockets[name], configPath, stderr: [] };
    proc.stderr!.on("data", (b: Buffer) => d.stderr.push(b.toString()));
    this.daemons.set(name, d);
    await waitFor(() => existsSync(d.socket) || proc.exitCode !== null, 15_000, `${name} socket`);
    if (proc.exitCode !== null) throw new Error(`${name} exited ${proc.exitCode}: ${d.stderr.join("")}`);
    return d;
  }

  async kill(name: string, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const d = this.daemons.get(name);
    if (!d || d.proc.exitCode !== null || d.proc.signalCode) return;
    const exited = once(d.proc, "exit");
    d.proc.kill(signal);
    await exited;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.daemons.keys()].map((n) => this.kill(n, "SIGTERM")));
    await this.sim?.close();
  }

  /** Runs the CLI binary against this stack's loopd; resolves with its output and exit code. */
  cli(args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}) {
    return runCli(args, { ...opts, env: { ...opts.env, BOXMAKER_SOCKET: this.sockets.loopd } });
  }
}

export async function runCli(
  args: string[],
  opts: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, cliArgv(args), {
    env: { ...process.env, NO_COLOR: "1", ...opts.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
  proc.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  proc.stdin.end(opts.input ?? "");
  const timer = setTimeout(() => proc.kill("SIGKILL"), opts.timeoutMs ?? 20_000);
  const [code] = (await once(proc, "exit")) as [number | null];
  clearTimeout(timer);
  return { code, stdout, stderr };
}

export async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
