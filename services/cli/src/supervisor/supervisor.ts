import { daemonEnvironment } from "./daemon-env.js";
import { chmodSync, existsSync, lstatSync, mkdirSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { DAEMON_NODE_FLAGS } from "@boxmaker/common/lite";
import {
  brokerdConfig,
  contractFromProps,
  inferproxyConfig,
  llamaServerArgs,
  llamaSimArgs,
  loopdConfig,
  upstreamCanPark,
  type JsonObject,
  type StackSettings,
  type Upstream,
} from "./configs.js";
import { daemonMain, llamaSimMain, missingBuilds, type DaemonName } from "./install-paths.js";
import type { Layout } from "./layout.js";
import { describeEvent, ManagedProcess, type ProcessEvent, type ProcessSpec } from "./managed-process.js";
import { getJson, inferproxySelfTestPassed, socketAccepts, waitReady, type Probe } from "./readiness.js";
import { modelServerProbe, modelWaitHooks, socketPathProblem, type Where } from "./server-health.js";
import type { Progress } from "./progress-line.js";
import { NotReadyError } from "../errors.js";
import { probeSlotSave } from "./parking-probe.js";
import { RestartPolicy, type RestartPolicyOptions } from "./restart-policy.js";
import { LogRotator } from "./log-rotator.js";
import type { LogRotationLimits } from "../log-rotation-plan.js";
import { readySummary, templateSentence } from "./ready-summary.js";

export interface SupervisorOptions {
  layout: Layout;
  upstream: Upstream;
  settings: StackSettings;
  /** Take the contract from the server's /props instead of the production values (always so for the simulator). */
  acceptServerContract: boolean;
  restart: RestartPolicyOptions;
  /** --ready-timeout: everything that waits on the model server (the server itself, inferproxy). */
  llamaReadyTimeoutMs: number;
  /** brokerd and loopd, which do not wait on the model and start in seconds. */
  daemonReadyTimeoutMs: number;
  /** Where a wait for the model server shows how it goes; none: the wait is silent. */
  progress?: Progress;
  stopGraceMs: number;
  nodePath: string;
  /** Where everything is: stdout, so it can be read by scripts. */
  out: (line: string) => void;
  /** What happens while running: stderr. */
  err: (line: string) => void;
  /** Called once every process is ready, before the summary says so. */
  onReady?: () => void;
  /** When a process's log is rotated: past what size, and how many older files are kept. */
  logRotation: LogRotationLimits;
}

/**
 * `boxmaker up`: the whole stack as children of one foreground process.
 * Start order and stop order follow the systemd units' After= ordering.
 */
export class Supervisor {
  private readonly procs = new Map<string, ManagedProcess>();
  private stopping: Promise<void> | undefined;
  /** Whether session parking is on, and why (for the summary). */
  private parking = "";
  /** The template probe's one sentence about the server's chat template (for the summary). */
  private template = "";
  private resolveDone!: (code: number) => void;
  /** Resolves with the exit code once the stack has stopped (signal: 0; a daemon that gave up: 1). */
  readonly done = new Promise<number>((r) => (this.resolveDone = r));
  /** Keeps each process's log (the model server's too) within --log-max-size, whatever restarts it goes through. */
  private readonly logs: LogRotator;

  constructor(private readonly o: SupervisorOptions) {
    this.logs = new LogRotator(o.logRotation, (log, message) =>
      o.err(`boxmaker up: could not rotate ${log}: ${message}`),
    );
  }

  async start(): Promise<void> {
    const { layout, upstream } = this.o;
    const needed = [daemonMain("inferproxy"), daemonMain("brokerd"), daemonMain("loopd")];
    if (upstream.kind === "llama-sim") needed.push(llamaSimMain);
    const missing = missingBuilds(needed);
    if (missing.length) throw new Error(`not built: ${missing.join(", ")} (run \`npm run build\`)`);
    // A socket path given by hand that is not there is most likely a typo: said at once, not after the ready timeout.
    if (upstream.kind === "socket") {
      const problem = socketPathProblem(upstream.path, "--upstream-socket");
      if (problem) throw new NotReadyError(problem);
    }

    this.prepareDirs();
    await this.refuseIfRunning();
    this.logs.start();

    const llama = this.llamaSpec();
    if (llama) await this.startProcess(llama);

    const where: Where = upstream.kind === "url" ? { url: upstream.url } : { socketPath: this.upstreamSocket() };
    // A server `up` did not start may still be loading its model: waited for here, within --ready-timeout and
    // with progress shown, before its /props is read (--accept-server-contract) or inferproxy checks it.
    if (!llama) await this.waitForUpstream(where);
    let settings = this.o.settings;
    if (upstream.kind === "llama-sim" || this.o.acceptServerContract) {
      const props = await getJson(where, "/props");
      if (props.status !== 200) throw new Error(`the server's /props answered ${props.status}`);
      settings = { ...settings, contract: contractFromProps(props.body) };
    }
    this.writeConfig("inferproxy", inferproxyConfig(layout, upstream, settings));
    this.writeConfig("brokerd", brokerdConfig(layout, settings));

    await Promise.all([
      this.startProcess(this.daemonSpec("inferproxy", inferproxySelfTestPassed(layout.sockets.inferproxy))),
      this.startProcess(this.daemonSpec("brokerd", socketAccepts(layout.sockets.brokerd))),
    ]);
    this.template = await templateSentence(layout.sockets.inferproxy);
    // A server `up` did not start may or may not save slots: ask it (inferproxy's
    // self-test has passed, so it answers). Parking is on whenever it works.
    let canPark = upstreamCanPark(upstream);
    if (!canPark) {
      const probe = await probeSlotSave(where);
      canPark = probe.works;
      this.parking = `${probe.works ? "on" : "off"}: ${probe.why}`;
    } else {
      this.parking = "on: the server saves slots (--slot-save-path)";
    }
    this.writeConfig("loopd", loopdConfig(layout, upstream, settings, canPark));
    await this.startProcess(this.daemonSpec("loopd", socketAccepts(layout.sockets.loopd)));
    this.o.onReady?.();
    this.printSummary();
  }

  /** Stops in reverse start order: loopd, then inferproxy and brokerd, then the model server. */
  stop(code = 0): Promise<void> {
    this.stopping ??= (async () => {
      const grace = this.o.stopGraceMs;
      await this.procs.get("loopd")?.stop(grace);
      await Promise.all(["inferproxy", "brokerd"].map((n) => this.procs.get(n)?.stop(grace)));
      for (const [name, p] of this.procs) if (name !== "loopd") await p.stop(grace);
      // Only sockets of processes this supervisor started: not an existing
      // upstream's, and not those of another stack it refused to replace.
      for (const name of this.procs.keys()) removeIfSocket(this.socketOf(name));
      await this.logs.stop();
      // Nothing started (a missing socket, a server that never loaded): the reason is the one line to see.
      if (this.procs.size) this.o.err("boxmaker up: stopped");
      this.resolveDone(code);
    })();
    return this.stopping;
  }

  /** The file names of the processes' logs, in the layout's logDir (for the stack record `status` reads). */
  logNames(): string[] {
    return [...this.procs.values()].map((p) => basename(p.spec.logPath));
  }

  /** The pid of a managed process, for `boxmaker up` tests and diagnostics. */
  pidOf(name: string): number | undefined {
    return this.procs.get(name)?.pid;
  }

  private socketOf(name: string): string {
    const { sockets } = this.o.layout;
    return name === "llama-sim" || name === "llama-server" ? sockets.llama : sockets[name as DaemonName];
  }

  private prepareDirs(): void {
    const { layout } = this.o;
    // Sockets are the daemons' only access control; a personal stack keeps its dir to its owner.
    mkdirSync(layout.runtimeDir, { recursive: true, mode: 0o700 });
    chmodSync(layout.runtimeDir, 0o700);
    for (const d of [layout.stateDir, layout.logDir, layout.slotDir, layout.brokerState, layout.loopdState]) {
      mkdirSync(d, { recursive: true, mode: 0o700 });
    }
  }

  private async refuseIfRunning(): Promise<void> {
    for (const [name, sock] of Object.entries(this.o.layout.sockets)) {
      if (name === "llama" && !this.llamaManaged()) continue;
      if (existsSync(sock) && (await socketAccepts(sock, 500)()).ready) {
        throw new Error(
          `${sock} is in use: another stack runs in ${this.o.layout.runtimeDir} (stop it, or use --runtime-dir)`,
        );
      }
    }
  }

  private llamaManaged(): boolean {
    return this.o.upstream.kind === "llama-server" || this.o.upstream.kind === "llama-sim";
  }

  private llamaName(): string {
    return this.o.upstream.kind === "llama-sim" ? "llama-sim" : "llama-server";
  }

  private upstreamSocket(): string {
    return this.o.upstream.kind === "socket" ? this.o.upstream.path : this.o.layout.sockets.llama;
  }

  private llamaSpec(): ProcessSpec | undefined {
    const { layout, upstream } = this.o;
    if (upstream.kind !== "llama-server" && upstream.kind !== "llama-sim") return undefined;
    const sim = upstream.kind === "llama-sim";
    return {
      name: this.llamaName(),
      command: sim ? this.o.nodePath : upstream.bin,
      args: sim
        ? [llamaSimMain, ...llamaSimArgs(layout, upstream.kind === "llama-sim" ? upstream.script : undefined)]
        : llamaServerArgs(layout, upstream.model, upstream.extraArgs),
      logPath: join(layout.logDir, `${this.llamaName()}.log`),
      probe: modelServerProbe({ socketPath: layout.sockets.llama }),
      readyTimeoutMs: this.o.llamaReadyTimeoutMs,
      hooks: modelWaitHooks(
        `${this.llamaName()} at ${layout.sockets.llama}`,
        this.o.llamaReadyTimeoutMs,
        this.o.progress,
      ),
      // llama-server leaves its socket behind and refuses to start while it exists.
      beforeStart: () => removeIfSocket(layout.sockets.llama),
      policy: new RestartPolicy({ ...this.o.restart, noRestartExitCodes: [] }),
    };
  }

  private async waitForUpstream(where: Where): Promise<void> {
    const label = `llama-server at ${"url" in where ? where.url : where.socketPath}`;
    await waitReady(modelServerProbe(where, "socketPath" in where), {
      timeoutMs: this.o.llamaReadyTimeoutMs,
      intervalMs: 250,
      what: label,
      hooks: modelWaitHooks(label, this.o.llamaReadyTimeoutMs, this.o.progress),
    });
  }

  private daemonSpec(name: DaemonName, probe: Probe): ProcessSpec {
    const { layout } = this.o;
    return {
      name,
      command: this.o.nodePath,
      args: [...DAEMON_NODE_FLAGS, daemonMain(name), "--config", this.configPath(name)],
      env: daemonEnvironment(process.env),
      logPath: join(layout.logDir, `${name}.log`),
      probe,
      // inferproxy is ready once its self-test against the server passed, which a loading server holds up.
      readyTimeoutMs: name === "inferproxy" ? this.o.llamaReadyTimeoutMs : this.o.daemonReadyTimeoutMs,
      policy: new RestartPolicy(this.o.restart),
    };
  }

  private configPath(name: DaemonName): string {
    return join(this.o.layout.configDir, `${name}.json`);
  }

  private writeConfig(name: DaemonName, config: JsonObject): void {
    writeFileSync(this.configPath(name), `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  }

  private async startProcess(spec: ProcessSpec): Promise<void> {
    this.logs.watch(spec.logPath);
    const p = new ManagedProcess({ ...spec, logRotations: () => this.logs.rotationsOf(spec.logPath) }, (e) =>
      this.onEvent(e),
    );
    this.procs.set(spec.name, p);
    await p.start();
  }

  private onEvent(e: ProcessEvent): void {
    this.o.err(`boxmaker up: ${describeEvent(e)}`);
    if (e.kind === "gave-up" && !this.stopping) {
      this.o.err("boxmaker up: stopping the stack");
      void this.stop(1);
    }
  }

  private printSummary(): void {
    const u = this.o.upstream;
    const lines = readySummary({
      layout: this.o.layout,
      procs: [...this.procs].map(([name, p]) => ({ name, pid: p.pid, socket: this.socketOf(name) })),
      ...(this.llamaManaged() ? {} : { upstream: u.kind === "url" ? u.url : this.upstreamSocket() }),
      parking: this.parking,
      template: this.template,
      workspaceRoots: this.o.settings.workspaceRoots,
      logRotation: this.o.logRotation,
    });
    for (const l of lines) this.o.out(l);
  }
}

function removeIfSocket(path: string): void {
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}
