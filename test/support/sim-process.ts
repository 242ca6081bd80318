import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_CHAT_TEMPLATE, type SimContract, type Turn } from "@boxmaker/llama-sim";
import { repoRoot } from "./stack.js";

const simMain = join(repoRoot, "test", "llama-sim", "dist", "main.js");

/** What inferproxy must be held to for a simulator process started with its defaults. */
export const simProcessContract: SimContract = {
  template_sha256: createHash("sha256").update(DEFAULT_CHAT_TEMPLATE).digest("hex"),
  n_ctx_per_slot: 32768,
  total_slots: 3,
};

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
   * `slots`: its --slots (llama-server's --parallel), 3 when not given.
   */
  async start(turns: Turn[], o: { loadingMs?: number; slots?: number } = {}): Promise<this> {
    const script = join(this.dir, `sim-script-${Date.now()}.json`);
    writeFileSync(script, JSON.stringify(turns));
    const loading = o.loadingMs ? ["--loading-ms", String(o.loadingMs)] : [];
    const slots = o.slots ? ["--slots", String(o.slots)] : [];
    const proc = spawn(
      process.execPath,
      [simMain, "--socket", this.socketPath, "--script", script, ...loading, ...slots],
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

  /** SIGKILL, as an OOM kill or a crash: the socket file stays. */
  async kill(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode) return;
    const exited = once(p, "exit");
    p.kill("SIGKILL");
    await exited;
  }
}
