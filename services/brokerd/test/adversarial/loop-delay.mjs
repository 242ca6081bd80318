// Preloaded into a brokerd under test (node --import): the daemon's own
// event-loop delay, written as JSON to $BX_LOOP_DELAY_FILE on SIGUSR2, after
// which the histogram starts over. Test-only: brokerd itself carries no hook.
import { writeFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";

const h = monitorEventLoopDelay({ resolution: 10 });
h.enable();
process.on("SIGUSR2", () => {
  const ms = (ns) => Math.round(ns / 1e4) / 100;
  const snap = { maxMs: ms(h.max), p99Ms: ms(h.percentile(99)), meanMs: ms(h.mean), samples: h.count, at: Date.now() };
  h.reset();
  writeFileSync(process.env.BX_LOOP_DELAY_FILE, JSON.stringify(snap));
});
