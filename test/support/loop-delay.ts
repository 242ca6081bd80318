import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Stack } from "./stack.js";

/** The preload that reports a daemon's event-loop delay (Stack's `nodeArgs: ["--import", LOOP_DELAY_PRELOAD]`). */
export const LOOP_DELAY_PRELOAD = fileURLToPath(new URL("./loop-delay-report.mjs", import.meta.url));

export interface LoopDelay {
  /** The longest CPU run of the daemon's main thread between two turns of its loop. */
  maxMs: number;
  /** The longest wall-clock delay of its loop (the scheduler's share included). */
  wallMaxMs: number;
  p99Ms: number;
  samples: number;
  at: number;
}

const read = (file: string): LoopDelay | undefined => {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as LoopDelay;
  } catch {
    return undefined;
  }
};

/**
 * Each daemon's event-loop delay since the last call, as the daemon itself
 * measured it (the preload answers SIGUSR2 into `dir`, which the daemons got
 * as BX_LOOP_DELAY_DIR). A daemon that does not answer within 20 s fails the
 * caller: a stall that long is the finding.
 */
export async function loopDelays(stack: Stack, dir: string): Promise<Record<string, LoopDelay>> {
  const out: Record<string, LoopDelay> = {};
  await Promise.all(
    [...stack.daemons.values()].map(async (d) => {
      out[d.name] = await loopDelayOf(d.proc, d.name, dir);
    }),
  );
  return out;
}

/** One daemon's event-loop delay since the last call (a process started with the preload and BX_LOOP_DELAY_DIR=dir). */
export async function loopDelayOf(proc: ChildProcess, name: string, dir: string): Promise<LoopDelay> {
  const file = join(dir, `${proc.pid!}.json`);
  const before = read(file);
  proc.kill("SIGUSR2");
  for (let i = 0; i < 800; i++) {
    const now = read(file);
    if (now && (!before || now.at !== before.at || now.samples !== before.samples)) return now;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${name} did not report its event-loop delay`);
}
