import { readdirSync } from "node:fs";
import { statusMb } from "./processes.js";

/** Resident memory and open fds of named processes, sampled every `everyMs` until stopped. */
export class ProcessSampler {
  readonly first = new Map<string, { rss: number; fds: number }>();
  readonly last = new Map<string, { rss: number; fds: number }>();
  readonly max = new Map<string, { rss: number; fds: number }>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    /** The pid each name has now (a restarted daemon has a new one); undefined while it is down. */
    readonly pidsNow: () => Map<string, number | undefined>,
    private readonly everyMs = 5_000,
  ) {}

  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }

  private sample(): void {
    for (const [name, pid] of this.pidsNow()) {
      if (pid === undefined) continue;
      let s: { rss: number; fds: number };
      try {
        s = { rss: statusMb(pid, "VmRSS"), fds: readdirSync(`/proc/${pid}/fd`).length };
      } catch {
        continue; // it died between the pid and the read
      }
      if (!this.first.has(name)) this.first.set(name, s);
      this.last.set(name, s);
      const m = this.max.get(name) ?? { rss: 0, fds: 0 };
      this.max.set(name, { rss: Math.max(m.rss, s.rss), fds: Math.max(m.fds, s.fds) });
    }
  }
}
