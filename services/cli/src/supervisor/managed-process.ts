import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { closeSync, fstatSync, openSync, writeSync } from "node:fs";
import { lastWords } from "./last-words.js";
import { describeExit, type RestartPolicy, formatDuration, type ExitInfo } from "./restart-policy.js";
import { waitReady, type Probe, type WaitHooks } from "./readiness.js";

export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** stdout and stderr are appended here. */
  logPath: string;
  /** How many times the log was rotated (emptied) so far (LogRotator): a run's output may then begin at 0. */
  logRotations?: () => number;
  probe: Probe;
  readyTimeoutMs: number;
  /** How the first start's wait is shown (the model server's progress line); restarts are reported as events. */
  hooks?: WaitHooks;
  /** Runs before every start, e.g. clearing the stale socket llama-server leaves behind. */
  beforeStart?: () => void;
  policy: RestartPolicy;
}

export type ProcessEvent =
  | { kind: "exited"; name: string; exit: ExitInfo; restartInMs?: number; attempt?: number; of?: number }
  | { kind: "ready-again"; name: string; pid: number }
  | { kind: "gave-up"; name: string; reason: string };

/**
 * One supervised child: started, probed until ready, restarted by its policy
 * when it dies on its own. Each child gets its own process group (detached)
 * so a Ctrl-C in the terminal reaches only the supervisor, which then stops
 * the stack in order (loopd first, so its running turns can still finish
 * talking to inferproxy).
 */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private exitAbort: AbortController | undefined;
  /** Whether the first start succeeded: until then an exit is start()'s to report, not a crash to restart. */
  private started = false;

  constructor(
    readonly spec: ProcessSpec,
    private readonly onEvent: (e: ProcessEvent) => void,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the process and resolves once it is ready; rejects (and leaves nothing running) if it is not. */
  async start(): Promise<void> {
    const ac = this.spawnOnce();
    try {
      await waitReady(this.spec.probe, {
        timeoutMs: this.spec.readyTimeoutMs,
        signal: ac.signal,
        what: this.spec.name,
        hooks: this.spec.hooks,
      });
    } catch (err) {
      await this.stop(2000);
      throw err;
    }
    this.started = true;
  }

  private spawnOnce(): AbortController {
    const { spec } = this;
    spec.beforeStart?.();
    const log = openSync(spec.logPath, "a");
    writeSync(log, `--- ${new Date().toISOString()} boxmaker up: starting ${spec.command} ${spec.args.join(" ")}\n`);
    // Where this run's own output begins: what it says before dying is read from here.
    const from = fstatSync(log).size;
    const rotations = spec.logRotations?.() ?? 0;
    const child = spawn(spec.command, spec.args, {
      stdio: ["ignore", log, log],
      env: spec.env ?? process.env,
      detached: true,
    });
    // The child holds its own copy of the descriptor.
    closeSync(log);
    const ac = new AbortController();
    this.child = child;
    this.exitAbort = ac;
    child.once("error", (err) => ac.abort(`could not start ${spec.command}: ${err.message}`));
    child.once("exit", (code, signal) => {
      // A daemon that refuses to start exits with a status after saying why in one line (a bad key, a
      // socket or state directory in use): that line, not the status, is what the person running `up` needs.
      // A log rotated since this run began holds only this run's output, from its start.
      const since = (spec.logRotations?.() ?? 0) === rotations ? from : 0;
      const said =
        ac.signal.aborted || code === null ? undefined : lastWords(spec.logPath, since)?.replace(/^fatal: /, "");
      ac.abort(said ?? `${describeExit({ code, signal })} before it was ready (log: ${spec.logPath})`);
      if (this.child === child) this.onExit({ code, signal });
    });
    return ac;
  }

  private onExit(exit: ExitInfo): void {
    if (this.stopping || !this.started) return;
    const decision = this.spec.policy.decide(exit, Date.now());
    if (!decision.restart) {
      this.onEvent({ kind: "gave-up", name: this.spec.name, reason: `${describeExit(exit)}; ${decision.reason}` });
      return;
    }
    this.onEvent({
      kind: "exited",
      name: this.spec.name,
      exit,
      restartInMs: decision.delayMs,
      attempt: decision.attempt,
      of: decision.of,
    });
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopping) return;
      const ac = this.spawnOnce();
      const pid = this.child?.pid ?? 0;
      waitReady(this.spec.probe, { timeoutMs: this.spec.readyTimeoutMs, signal: ac.signal, what: this.spec.name }).then(
        () => this.onEvent({ kind: "ready-again", name: this.spec.name, pid }),
        // Died again before ready: its exit handler decides what is next. Alive but
        // never ready: kill it, so the exit handler counts it as a failed restart.
        () => {
          if (!ac.signal.aborted) this.child?.kill("SIGKILL");
        },
      );
    }, decision.delayMs);
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. No restart follows. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.exitAbort?.abort("stopping");
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    const timer = setTimeout(() => {
      // The whole group: a daemon's own children (MCP servers, sandboxed commands) go too.
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, graceMs);
    await exited;
    clearTimeout(timer);
    // Anything the daemon started and left behind in its group goes with it.
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // ESRCH: the group is already empty, the normal case.
    }
  }
}

export function describeEvent(e: ProcessEvent): string {
  switch (e.kind) {
    case "exited":
      return `${e.name} ${describeExit(e.exit)}; restarting in ${formatDuration(e.restartInMs!)} (restart ${e.attempt} of ${e.of})`;
    case "ready-again":
      return `${e.name} restarted and ready (pid ${e.pid})`;
    case "gave-up":
      return `${e.name} ${e.reason}`;
  }
}
