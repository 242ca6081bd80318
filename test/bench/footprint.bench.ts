// What the daemons cost while nobody uses them: resident memory of each
// daemon idle after start and after 100 turns, and CPU over an idle window
// (health polls and timers must be cheap; no busy polling). Reads /proc.
// BOXMAKER_BENCH_IDLE_S sets the idle window: 60 s, or 600 s in the soak form,
// where the health poll's first, closely spaced checks weigh little.
import { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { cpuSeconds, statusMb } from "../support/processes.js";
import { doneOf, loopClient, newSession, turn } from "../support/loop-client.js";
import type { BenchContext, Emit } from "./bench-context.js";

export const timeLimitS = 240;
export const soakTimeLimitS = 900;

const DAEMONS = ["inferproxy", "brokerd", "loopd"] as const;
const rssMb = (pid: number) => statusMb(pid, "VmRSS");
// Resident memory only this daemon holds (its heap, code, buffers). The rest of its RSS is
// file-backed: the node binary's and libraries' pages, the same pages in all three daemons.
const privateMb = (pid: number) => statusMb(pid, "RssAnon");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export default async function (emit: Emit, { soak }: BenchContext): Promise<void> {
  const idleS = Number(process.env.BOXMAKER_BENCH_IDLE_S ?? (soak ? 600 : 60));
  const tmp = tempDir("bxb-f-");
  // Production poll interval, not the tests' fast one: idle cost is what it costs in service.
  const stack = await new Stack(tmp.dir, {
    inferproxy: { health_poll_ms: 2000, log_level: "info" },
    loopd: { log_level: "info" },
    brokerd: { log_level: "info" },
  }).start();
  const client = loopClient(stack.sockets.loopd);
  const pid = (d: string) => stack.daemons.get(d)!.proc.pid!;
  try {
    await sleep(3000);
    for (const d of DAEMONS) emit(`${d}_idle_rss_mb`, rssMb(pid(d)), "MB");
    for (const d of DAEMONS) emit(`${d}_idle_private_mb`, privateMb(pid(d)), "MB");

    const id = await newSession(client, "footprint");
    for (let i = 0; i < 100; i++) {
      stack.sim.enqueue({ reasoning: "Short thought.", content: `Answer ${i}: fine.` });
      doneOf(await turn(client, id, `message ${i}`));
    }
    await sleep(2000);
    for (const d of DAEMONS) emit(`${d}_rss_after_100_turns_mb`, rssMb(pid(d)), "MB");

    const before = DAEMONS.map((d) => cpuSeconds(pid(d)));
    const t0 = performance.now();
    await sleep(idleS * 1000);
    const seconds = (performance.now() - t0) / 1000;
    const used = DAEMONS.map((d, i) => cpuSeconds(pid(d)) - before[i]!);
    for (const [i, d] of DAEMONS.entries()) emit(`${d}_idle_cpu_pct`, (100 * used[i]!) / seconds, "%");
    emit("idle_cpu_pct_all_daemons", (100 * used.reduce((a, b) => a + b, 0)) / seconds, "%");
    emit("idle_window_s", seconds, "s");
  } finally {
    client.close();
    await stack.stop();
    tmp.cleanup();
  }
}
