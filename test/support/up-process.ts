import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { cliArgv, waitFor } from "./stack.js";

/** `boxmaker up` as a user runs it: the built CLI, its own process, read through its output. */
export class Up {
  stdout = "";
  stderr = "";
  readonly proc: ChildProcess;
  constructor(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env) {
    this.proc = spawn(process.execPath, cliArgv(["up", ...args]), { cwd, env: { ...env, NO_COLOR: "1" } });
    this.proc.stdout!.on("data", (b: Buffer) => (this.stdout += b.toString()));
    this.proc.stderr!.on("data", (b: Buffer) => (this.stderr += b.toString()));
  }

  /** Resolves once the summary is out; fails fast if `up` exits first. */
  async ready(timeoutMs = 30_000): Promise<void> {
    await waitFor(
      () => this.stdout.includes("export BOXMAKER_SOCKET=") || this.proc.exitCode !== null,
      timeoutMs,
      "boxmaker up",
    );
    if (this.proc.exitCode !== null) throw new Error(`up exited ${this.proc.exitCode}: ${this.stderr}`);
  }

  pid(name: string): number {
    const m = new RegExp(`^  ${name}\\s+pid (\\d+)`, "m").exec(this.stdout);
    if (!m) throw new Error(`no pid for ${name} in:\n${this.stdout}`);
    return Number(m[1]);
  }
}

/** Stops `up` as a person would (SIGINT): a killed supervisor would leave its daemons running. */
export async function stopUp(u: Up): Promise<void> {
  if (u.proc.exitCode !== null || u.proc.signalCode !== null) return;
  const exited = once(u.proc, "exit");
  u.proc.kill("SIGINT");
  await exited;
}
