import { describe, expect, it } from "vitest";
import { Throughput } from "../src/throughput.js";

describe("the server's measured speed", () => {
  it("is tokens over time across requests (llama.cpp's count: the first generated token left out)", () => {
    const t = new Throughput();
    expect(t.report()).toEqual({ generationTokensPerS: 0, prefillTokensPerS: 0, requests: 0 });
    t.observe({ promptN: 1000, promptMs: 2000, predictedN: 101, predictedMs: 4000 });
    t.observe({ promptN: 3000, promptMs: 2000, predictedN: 301, predictedMs: 8000 });
    // (100 + 300) tokens in 12 s, not the mean of 25 and 37.5 tokens/s.
    expect(t.report()).toEqual({ generationTokensPerS: 400 / 12, prefillTokensPerS: 1000, requests: 2 });
  });

  it("ignores requests too short to measure, and keeps only the last 32", () => {
    const t = new Throughput();
    t.observe({ promptN: 10, promptMs: 1, predictedN: 3, predictedMs: 1 });
    t.observe(undefined);
    t.observe({});
    expect(t.report().requests).toBe(0);
    for (let i = 0; i < 40; i++) t.observe({ predictedN: 101, predictedMs: i < 8 ? 1000 : 4000 });
    // The 8 fast ones (100 tokens/s) have left the window: 32 requests at 25 tokens/s remain.
    expect(t.report()).toMatchObject({ generationTokensPerS: 25, requests: 32 });
  });
});
