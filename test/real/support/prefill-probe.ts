// How long one prefill batch keeps a real llama-server silent, measured
// through inferproxy: a long prompt is sent with Complete (progress events
// on), while GET /slots is asked straight on the server's socket every
// 250 ms. Shared by test/real/prefill-liveness.test.ts and the
// prefill-silence bench.
import { Agent, request } from "undici";
import { InferService, createClient, type RpcError } from "@boxmaker/common";
import { PrefillPace, paceLimits } from "../../../services/inferproxy/src/completion/prefill-pace.js";
import type { RealLlama } from "./real-llama.js";

export interface BatchSeen {
  /** Tokens in the slot when the batch began, and after it. */
  from: number;
  to: number;
  /** The server's own time for the batch (prompt_progress time_ms). */
  serverMs: number;
  /** Silence on the stream: between the progress events' arrivals. */
  silenceMs: number;
  /** The window inferproxy allowed that silence (its PrefillPace, replayed on the same events). */
  windowMs: number;
  /** GET /slots asked during the batch: answered, the slowest answer, whether its counters moved inside the batch. */
  probes: number;
  probesAnswered: number;
  slowestProbeMs: number;
  advancedInside: boolean;
}

export interface PrefillRun {
  batches: BatchSeen[];
  error: RpcError | undefined;
  finished: boolean;
  promptTokens: number;
}

/** A user message of about `tokens` tokens as the server counts them. */
export async function promptOf(llama: RealLlama, tokens: number): Promise<string> {
  const unit = "alpha beta gamma delta ";
  const { body } = await llama.post("/tokenize", { content: unit.repeat(100) });
  const perUnit = (body.tokens as unknown[]).length / 100;
  return unit.repeat(Math.max(1, Math.floor(tokens / perUnit)));
}

export async function measurePrefill(
  llama: RealLlama,
  inferproxySocket: string,
  o: { tokens: number; windowMs: number; slot?: number },
): Promise<PrefillRun> {
  const text = await promptOf(llama, o.tokens);
  const client = createClient(InferService, inferproxySocket);
  const agent = new Agent({ connect: { socketPath: llama.socketPath } });
  const probes: Array<{ at: number; ms: number; answered: boolean; processed: number }> = [];
  let probing = true;
  const poller = (async () => {
    while (probing) {
      const at = performance.now();
      try {
        const r = await request("http://localhost/slots", { dispatcher: agent, headersTimeout: 120_000 });
        const body = (await r.body.json()) as Array<{ id: number; n_prompt_tokens_processed?: number }>;
        const s = body.find((x) => x.id === (o.slot ?? 0));
        probes.push({ at, ms: performance.now() - at, answered: true, processed: s?.n_prompt_tokens_processed ?? -1 });
      } catch {
        probes.push({ at, ms: performance.now() - at, answered: false, processed: -1 });
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  const progress: Array<{ arrived: number; processed: number; timeMs: number; total: number }> = [];
  let error: RpcError | undefined;
  let finished = false;
  try {
    for await (const ev of client.complete({
      slot: o.slot ?? 0,
      messagesJson: JSON.stringify([{ role: "user", content: text }]),
      maxTokens: 1,
      requestId: "prefill-probe",
    })) {
      if (ev.event.case === "progress") {
        const v = ev.event.value;
        progress.push({ arrived: performance.now(), processed: v.processed, timeMs: v.timeMs, total: v.total });
      }
      if (ev.event.case === "final") finished = true;
    }
  } catch (err) {
    error = err as RpcError;
  } finally {
    probing = false;
    await poller;
    client.close();
    await agent.close();
  }
  // The windows a fresh inferproxy chose: its own pace, fed the same progress events in the same order.
  const pace = new PrefillPace();
  const limits = paceLimits(o.windowMs);
  const batches: BatchSeen[] = [];
  for (let i = 1; i < progress.length; i++) {
    const a = progress[i - 1]!;
    const b = progress[i]!;
    const w = pace.windowFor(a.processed, b.total, limits);
    pace.observe(a.processed, b.processed, b.timeMs - a.timeMs, true);
    const inside = probes.filter((p) => p.at > a.arrived && p.at + p.ms < b.arrived);
    batches.push({
      from: a.processed,
      to: b.processed,
      serverMs: b.timeMs - a.timeMs,
      silenceMs: b.arrived - a.arrived,
      windowMs: Math.max(o.windowMs, w.windowMs),
      probes: inside.length,
      probesAnswered: inside.filter((p) => p.answered).length,
      slowestProbeMs: Math.max(0, ...inside.map((p) => p.ms)),
      advancedInside: inside.some((p) => p.answered && p.processed > a.processed - (progress[0]?.processed ?? 0)),
    });
  }
  return { batches, error, finished, promptTokens: progress[0]?.total ?? 0 };
}

/** The batch that reads across `depth` (the one whose span holds it), or the last one. */
export function batchAt(run: PrefillRun, depth: number): BatchSeen | undefined {
  return run.batches.find((b) => b.from <= depth && depth < b.to) ?? run.batches.at(-1);
}
