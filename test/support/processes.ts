import { fork, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { dirname } from "node:path";

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

/**
 * A node script in its own process, once it says it is ready (`process.send`). A script
 * that exits first rejects: a server that cannot start fails the test instead of hanging it.
 */
export async function forkReady(script: string, args: string[]): Promise<ChildProcess> {
  const child = fork(script, args);
  const ready = await Promise.race([once(child, "message").then(() => true), once(child, "exit").then(() => false)]);
  if (!ready) throw new Error(`${script} exited before it was ready (${child.exitCode ?? child.signalCode})`);
  return child;
}

/**
 * A process's open fds by what they are: "socket", "pipe", "anon_inode:[eventfd]"…, or the
 * directory of an open file (its session logs, its blobs). What a growing fd count is made of.
 */
export function openFdsByKind(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out;
  }
  for (const fd of fds) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed while listed
    }
    const kind = target.startsWith("/") ? dirname(target) : target.replace(/:\[\d+\]$/, "");
    out.set(kind, (out.get(kind) ?? 0) + 1);
  }
  return out;
}
