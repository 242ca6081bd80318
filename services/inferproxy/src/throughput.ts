/**
 * The server's speed as its own timings report it, over the last requests
 * long enough to measure: what `doctor` turns budgets into minutes with. A
 * request of a few tokens says more about latency than speed, so generation
 * counts requests of at least MIN_GENERATED tokens and prompt reading those
 * that read at least MIN_READ. Pure: fed each final message's timings.
 */
/** A final message's timings as it is built (any field may be absent). */
export interface RequestTimings {
  promptN?: number | undefined;
  promptMs?: number | undefined;
  predictedN?: number | undefined;
  predictedMs?: number | undefined;
}

const WINDOW = 32;
const MIN_GENERATED = 16;
const MIN_READ = 64;

export class Throughput {
  private readonly generation: { n: number; ms: number }[] = [];
  private readonly prefill: { n: number; ms: number }[] = [];

  observe(t: RequestTimings | undefined): void {
    if (!t) return;
    const { promptN = 0, promptMs = 0, predictedN = 0, predictedMs = 0 } = t;
    // llama.cpp's own rate leaves out the first token (sampled in the prompt pass): so does this one.
    if (predictedN >= MIN_GENERATED && predictedMs > 0) push(this.generation, { n: predictedN - 1, ms: predictedMs });
    if (promptN >= MIN_READ && promptMs > 0) push(this.prefill, { n: promptN, ms: promptMs });
  }

  report(): { generationTokensPerS: number; prefillTokensPerS: number; requests: number } {
    return {
      generationTokensPerS: rate(this.generation),
      prefillTokensPerS: rate(this.prefill),
      requests: this.generation.length,
    };
  }
}

function push(window: { n: number; ms: number }[], s: { n: number; ms: number }): void {
  window.push(s);
  if (window.length > WINDOW) window.shift();
}

/** Tokens over time, not a mean of rates: a long request weighs what it took. */
function rate(window: readonly { n: number; ms: number }[]): number {
  const ms = window.reduce((a, s) => a + s.ms, 0);
  return ms > 0 ? (1000 * window.reduce((a, s) => a + s.n, 0)) / ms : 0;
}
