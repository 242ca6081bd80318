// Crashes and restarts for a stack on a simulator process: one of the three
// daemons or the server at a time, with SIGTERM or SIGKILL, then started
// again, for as long as a soak runs.
import type { SimProcess } from "./sim-process.js";
import type { Stack } from "./stack.js";

export const DAEMONS = ["inferproxy", "brokerd", "loopd"] as const;
type Daemon = (typeof DAEMONS)[number];
type Target = Daemon | "llama-server";
const TARGETS: readonly Target[] = [...DAEMONS, "llama-server"];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Kills one process at a time and starts it again, every 4–10 s: SIGTERM (a
 * stop) or SIGKILL (a crash, an OOM kill), down for 0.2–2 s. Keeps when loopd
 * was down, so that a client's stream cut then is known to have a cause.
 */
export class Chaos {
  readonly kills = new Map<string, number>(TARGETS.map((t) => [t, 0]));
  readonly restartFailures: string[] = [];
  readonly slowStops: string[] = [];
  private readonly loopdDown: { from: number; to: number }[] = [];
  private stopping = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly stack: Stack,
    private readonly sim: SimProcess,
    private readonly rand: () => number,
    /** How the server is started again (its script, its --n-ctx). */
    private readonly startSim: (sim: SimProcess) => Promise<unknown>,
  ) {}

  start(): void {
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
  }

  /** Whether loopd was down at any moment between `from` and `to` (ms, performance.now()). */
  loopdDownBetween(from: number, to: number): boolean {
    return this.loopdDown.some((w) => w.from <= to + 1000 && w.to >= from - 1000);
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      await sleep(4000 + this.rand() * 6000);
      if (this.stopping) break;
      const target = TARGETS[Math.floor(this.rand() * TARGETS.length)]!;
      const signal: NodeJS.Signals = this.rand() < 0.5 ? "SIGKILL" : "SIGTERM";
      await this.bounce(target, signal, 200 + this.rand() * 1800);
    }
  }

  private async bounce(target: Target, signal: NodeJS.Signals, downMs: number): Promise<void> {
    const from = performance.now();
    const window = { from, to: Number.POSITIVE_INFINITY };
    if (target === "loopd") this.loopdDown.push(window);
    await this.stopOrKill(target, signal);
    this.kills.set(target, this.kills.get(target)! + 1);
    await sleep(downMs);
    await this.restart(target);
    window.to = performance.now();
  }

  /** Sends `signal`; a process still there 15 s after a SIGTERM is recorded (a finding) and SIGKILLed. */
  private async stopOrKill(target: Target, signal: NodeJS.Signals): Promise<void> {
    const kill = (s: NodeJS.Signals) => (target === "llama-server" ? this.sim.kill(s) : this.stack.kill(target, s));
    const exited = kill(signal).then(() => true);
    if (await Promise.race([exited, sleep(15_000).then(() => false)])) return;
    this.slowStops.push(`${target} still running 15 s after ${signal}`);
    await kill("SIGKILL");
    await exited;
  }

  /** Starts the target again; a start that fails is retried and recorded (a finding: it should not fail). */
  async restart(target: Target): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        if (target === "llama-server") await this.startSim(this.sim);
        else await this.stack.startDaemon(target);
        return;
      } catch (err) {
        this.restartFailures.push(`${target} attempt ${attempt}: ${String(err).slice(0, 300)}`);
        if (attempt >= 5) throw err;
        await sleep(1000);
      }
    }
  }

  /** Every process up, whatever the last bounce left (called once the loop has stopped). */
  async ensureUp(): Promise<void> {
    if (this.sim.pid === undefined) await this.restart("llama-server");
    for (const d of DAEMONS) {
      const p = this.stack.daemons.get(d)!.proc;
      if (p.exitCode !== null || p.signalCode) await this.restart(d);
    }
  }
}
