// Preloaded into every daemon of a test stack (node --import): how long its
// event loop was held, written as JSON to $BX_LOOP_DELAY_DIR/<pid>.json on
// SIGUSR2, after which the figures start over. One file per process, so one
// environment serves loopd, inferproxy and brokerd alike. Test-only: the
// daemons carry no such hook.
//
// `maxMs` is the longest stretch the main thread spent *running* between two
// ticks of a 10 ms timer (its own CPU time), which is what a blocking input
// does to a daemon and not what a loaded machine's scheduler does to it;
// `wallMaxMs`, the plain event-loop delay, is kept for the report.
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";

const TICK_MS = 10;
const dir = process.env.BX_LOOP_DELAY_DIR;
if (dir) {
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
      samples: ticks,
      at: Date.now(),
    };
    h.reset();
    maxCpu = 0;
    ticks = 0;
    lastCpu = cpuMs();
    // Written beside and renamed, so a reader never sees half a file.
    const file = join(dir, `${process.pid}.json`);
    writeFileSync(`${file}.tmp`, JSON.stringify(snap));
    renameSync(`${file}.tmp`, file);
  });
}
