import { readdirSync, readFileSync } from "node:fs";

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Every live process whose command line mentions `marker` (a unique temp dir, a flag). */
export function processesMentioning(marker: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, "utf8").includes(marker)) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}
