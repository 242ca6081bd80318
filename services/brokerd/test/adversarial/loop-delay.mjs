// Preloaded into a daemon under test (node --import): how long its event loop
// was held, written as JSON to $BX_LOOP_DELAY_FILE on SIGUSR2, after which the
// figures start over. Test-only: the daemons carry no hook.
//
// `maxMs` is the longest stretch the main thread spent *running* between two
// turns of the loop: the CPU time the thread used between consecutive ticks
// of a 10 ms timer. That is what a blocking input does to a daemon (a
// backtracking regex, a quadratic parse), and it does not count the time the
// process was merely waiting for a core: on a loaded two-core machine the
// wall-clock delay (`wallMaxMs`, kept for the report) is mostly the scheduler.
import { writeFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";

const TICK_MS = 10;
const h = monitorEventLoopDelay({ resolution: TICK_MS });
h.enable();

const cpuMs = () => {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
};
let lastCpu = cpuMs();
let maxCpu = 0;
let ticks = 0;
setInterval(() => {
  const now = cpuMs();
  maxCpu = Math.max(maxCpu, now - lastCpu);
  lastCpu = now;
  ticks++;
}, TICK_MS).unref();

process.on("SIGUSR2", () => {
  const ms = (ns) => Math.round(ns / 1e4) / 100;
  const snap = {
    maxMs: Math.round(maxCpu * 100) / 100,
    wallMaxMs: ms(h.max),
    p99Ms: ms(h.percentile(99)),
    meanMs: ms(h.mean),
    samples: ticks,
    at: Date.now(),
  };
  h.reset();
  maxCpu = 0;
  ticks = 0;
  lastCpu = cpuMs();
  writeFileSync(process.env.BX_LOOP_DELAY_FILE, JSON.stringify(snap));
});
