import { afterEach, describe, expect, it } from "vitest";
import { Status } from "@boxmaker/common";
import { collect, startStack, userMessages, type Stack } from "./support/stack.js";

let s: Stack;
afterEach(async () => {
  await s?.close();
});

/**
 * A prefill batch deep in a long context keeps llama-server silent for longer
 * than one near its start (measured on the real server: docs/llama-server-
 * measurements.md). The simulator's batches here grow by 40 ms per 1,000
 * tokens of depth, so past ~2.5k tokens each outlasts the 200 ms window.
 */
describe("liveness during a prefill follows the server's pace", () => {
  const deepBatches = { prefillMsPerBatch: 100, prefillMsPer1kDepth: 40 };

  it("a prefill whose batches each outlast the configured window is not killed", async () => {
    s = await startStack({ sim: { batchSize: 1024 }, config: { liveness_timeout_ms: 200 } });
    s.sim.enqueue({ content: "read it all", ...deepBatches });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages("word ".repeat(12_000)) });
    expect(r.error).toBeUndefined();
    expect(r.final!.content).toBe("read it all");
    const progress = r.events.filter((e) => e.event.case === "progress");
    expect(progress.length).toBeGreaterThanOrEqual(12);
    // The simulator sleeps at least 100 + 40·depth/1000 ms per batch: from depth 2.5k on, longer than the window.
    const last = progress.at(-1)!.event.value as { processed: number; total: number };
    expect(last.processed).toBe(last.total);
    expect(100 + (40 * (last.total - 1024)) / 1000).toBeGreaterThan(2 * 200);
  });

  it("a batch that never ends is still declared dead, once the window the pace allows is over", async () => {
    s = await startStack({ sim: { batchSize: 1024 }, config: { liveness_timeout_ms: 200 } });
    // First a prompt read at the pace above: what the server's reading speed is.
    s.sim.enqueue({ content: "ok", ...deepBatches });
    expect((await collect(s.client, { slot: 0, messagesJson: userMessages("word ".repeat(6_000)) })).error).toBe(
      undefined,
    );
    // Then a server that stops inside a batch (a hung GPU): /slots answers, the slot processes, nothing moves.
    s.sim.enqueue({ content: "never", prefillMsPerBatch: 60_000 });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages("other ".repeat(6_000)) });
    expect(r.error?.status).toBe(Status.DEADLINE_EXCEEDED);
    expect(r.error!.details.livenessReason).toMatch(/decoded nothing/);
    // The window in effect was the prefill's, above the configured 200 ms, far below the 60 s batch and the ceiling.
    const w = r.error!.details.livenessTimeoutMs;
    expect(w).toBeGreaterThan(200);
    expect(w).toBeLessThan(8_000);
    expect(r.error!.message).toMatch(/liveness window \d+ ms/);
  });

  it("after the prompt is read the configured window is back: a silent generation is killed at it", async () => {
    s = await startStack({ sim: { batchSize: 1024 }, config: { liveness_timeout_ms: 200 } });
    s.sim.enqueue({ content: ["a", "b"], silenceMs: 5_000, silenceAfterTokens: 1, ...deepBatches });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages("word ".repeat(6_000)) });
    expect(r.error?.status).toBe(Status.DEADLINE_EXCEEDED);
    expect(r.error!.details.livenessTimeoutMs).toBe(200);
    expect(r.partial!.content).toBe("a");
    expect(r.events.filter((e) => e.event.case === "progress").length).toBeGreaterThan(4);
  });
});
