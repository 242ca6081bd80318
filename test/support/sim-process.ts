import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_CHAT_TEMPLATE, type SimContract, type Turn } from "@boxmaker/llama-sim";
import { Agent, request } from "undici";
import { repoRoot } from "./stack.js";

const simMain = join(repoRoot, "test", "llama-sim", "dist", "main.js");

/** What inferproxy must be held to for a simulator process started with these --n-ctx and --slots. */
export const simContractFor = (nCtx = 32768, slots = 3): SimContract => ({
  template_sha256: createHash("sha256").update(DEFAULT_CHAT_TEMPLATE).digest("hex"),
  n_ctx_per_slot: nCtx,
  total_slots: slots,
});

/** What inferproxy must be held to for a simulator process started with its defaults. */
export const simProcessContract: SimContract = simContractFor();

/**
 * The simulator as a process of its own, as llama-server is: SIGKILL leaves
 * its socket file behind (nothing unlinks it), which the in-process
 * simulator's restart cannot show.
 */
export class SimProcess {
  private proc: ChildProcess | undefined;

  constructor(
    readonly socketPath: string,
    private readonly dir: string,
  ) {}

  /**
   * Starts a process playing `turns`; resolves once it listens (it clears a stale socket first).
   * `loadingMs`: it answers 503 "Loading model" for that long first, as llama-server does while loading.
   * `slots`: its --slots (llama-server's --parallel), 3 when not given. `nCtx`: its --n-ctx per slot.
   */
  async start(turns: Turn[], o: { loadingMs?: number; slots?: number; nCtx?: number } = {}): Promise<this> {
    const script = join(this.dir, `sim-script-${Date.now()}.json`);
    writeFileSync(script, JSON.stringify(turns));
    const loading = o.loadingMs ? ["--loading-ms", String(o.loadingMs)] : [];
    const slots = o.slots ? ["--slots", String(o.slots)] : [];
    const nCtx = o.nCtx ? ["--n-ctx", String(o.nCtx)] : [];
    const proc = spawn(
      process.execPath,
      [simMain, "--socket", this.socketPath, "--script", script, ...loading, ...slots, ...nCtx],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    this.proc = proc;
    let out = "";
    const listening = new Promise<void>((resolve, reject) => {
      proc.stdout!.on("data", (b: Buffer) => {
        out += b.toString();
        if (out.includes("llama-sim listening")) resolve();
      });
      proc.stderr!.on("data", (b: Buffer) => (out += b.toString()));
      proc.once("exit", (code, signal) =>
        reject(new Error(`llama-sim exited ${code ?? signal} before listening: ${out}`)),
      );
    });
    await listening;
    return this;
  }

  /** The running process's pid; undefined while it is stopped. */
  get pid(): number | undefined {
    const p = this.proc;
    return p && p.exitCode === null && !p.signalCode ? p.pid : undefined;
  }

  /**
   * SIGKILL by default, as an OOM kill or a crash: the socket file stays. SIGTERM is a clean
   * stop (the simulator removes its socket).
   */
  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode) return;
    const exited = once(p, "exit");
    p.kill(signal);
    await exited;
  }

  /** Queues turns in the running process (its /__sim/script route), for one slot or any. */
  async enqueue(turns: Turn[], slot?: number): Promise<void> {
    const agent = new Agent({ connect: { socketPath: this.socketPath } });
    try {
      const r = await request("http://llama-sim/__sim/script", {
        method: "POST",
        dispatcher: agent,
        headers: { "content-type": "application/json" },
        body: JSON.stringify(slot === undefined ? { turns } : { turns, slot }),
      });
      const text = await r.body.text();
      if (r.statusCode !== 200) throw new Error(`llama-sim refused the script (${r.statusCode}): ${text}`);
    } finally {
      await agent.close();
    }
  }
}
