// How long one prefill batch keeps a real llama-server silent at 32k, 64k and
// 128k tokens of context, and the liveness window inferproxy chose for it
// (docs/llama-server-measurements.md, "Liveness at depth"). The tiny model's
// CPU prefill at the default --batch-size 2048 through the whole inferproxy
// path; GET /slots is asked on the server's socket every 250 ms meanwhile.
// The whole depth (126k tokens, all three figures) takes about 15 minutes on
// 2 cores, so it is the soak form (`npm run bench:soak`); `npm run bench`
// reads 37k tokens, the 32k figures alone (37k leaves a full batch from
// 32,768 on). BOXMAKER_BENCH_PREFILL_TOKENS sets the depth either way. Needs
// `npm run llama-server:build`.
import { join } from "node:path";
import { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { RealLlama, contractOf, findRealLlama } from "../real/support/real-llama.js";
import { batchAt, measurePrefill } from "../real/support/prefill-probe.js";
import type { BenchContext, Emit } from "./bench-context.js";

export const timeLimitS = 300;
export const soakTimeLimitS = 2700;

const WINDOW_MS = 5000;

export default async function (emit: Emit, { soak, skip }: BenchContext): Promise<void> {
  if (!findRealLlama()) return skip("no real llama-server built (npm run llama-server:build)");
  const tokens = Number(process.env.BOXMAKER_BENCH_PREFILL_TOKENS ?? (soak ? 126_000 : 37_000));
  const tmp = tempDir("bxb-pf-");
  // One slot of 131,072 tokens: the tiny model's trained context, and the production slot size.
  const llama = await new RealLlama({
    model: "answer",
    socketPath: join(tmp.dir, "llama.sock"),
    parallel: 1,
    ctxSize: 131_072,
    extraArgs: ["--cache-ram", "0"],
  }).start();
  const stack = await new Stack(tmp.dir, {
    upstream: { socketPath: llama.socketPath, contract: await contractOf(llama) },
    inferproxy: { liveness_timeout_ms: WINDOW_MS },
  }).start();
  try {
    const run = await measurePrefill(llama, stack.sockets.inferproxy, { tokens, windowMs: WINDOW_MS });
    if (run.error) throw run.error;
    for (const depth of [32_768, 65_536, 131_072]) {
      if (depth > run.promptTokens + 8192) continue;
      // The deepest full batch stands for 128k: the prompt's last batch is a short remainder.
      const b = batchAt(run, Math.min(depth, run.promptTokens - 2049))!;
      const k = `${Math.round(b.from / 1024)}k`;
      emit(`silence_ms_batch_at_${k}`, b.silenceMs, "ms");
      emit(`window_ms_batch_at_${k}`, b.windowMs, "ms");
      emit(`slots_answered_in_batch_at_${k}`, b.probes ? b.probesAnswered / b.probes : 0, "ratio");
      emit(`slots_slowest_answer_ms_at_${k}`, b.slowestProbeMs, "ms");
      emit(`slots_counters_moved_in_batch_at_${k}`, b.advancedInside ? 1 : 0, "bool");
    }
    emit("longest_silence_ms", Math.max(...run.batches.map((b) => b.silenceMs)), "ms");
    emit("longest_silence_over_window", Math.max(...run.batches.map((b) => b.silenceMs / b.windowMs)), "ratio");
    emit("prompt_tokens", run.promptTokens, "tokens");
  } finally {
    await stack.stop();
    await llama.close();
    tmp.cleanup();
  }
}
