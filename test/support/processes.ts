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

/** A figure from /proc/<pid>/status in MB (VmRSS, RssAnon, …). */
export const statusMb = (pid: number, field: string): number =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat (USER_HZ ticks). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces): state is [0], utime [11], stime [12].
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}
