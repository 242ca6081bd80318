/**
 * How long one prefill batch may keep llama-server silent, from how fast it
 * has been reading prompts.
 *
 * The server streams a `prompt_progress` event after each batch of the
 * prompt (n_batch tokens, 2,048 by default) and nothing while it decodes
 * one, and its `/slots` counters do not move inside a batch. A batch deep in
 * a long context takes longer than one near its start: every token attends
 * to all before it. Measured on the tiny CPU model (docs/llama-server-
 * measurements.md), a 2,048-token batch took 1.8 s at depth 0 and 6–7 s at
 * 28k, past the fixed 5 s window that used to kill it.
 *
 * The cost of a token at depth d is modelled as linear, t(d) = α + β·d with
 * α, β ≥ 0. Then an observation t(dᵢ) bounds every deeper token from above:
 * t(d) ≤ t(dᵢ) · d/dᵢ for d ≥ dᵢ (and t(d) ≤ t(dᵢ) for d ≤ dᵢ), whatever α and
 * β are. Each observation so gives a bound; the window is a margin times
 * the largest bound of the last few, between the configured window and a
 * ceiling. The largest, not the tightest: on a loaded machine one batch took
 * 3.8× the one before it, which the tightest bound with a 3× margin would
 * have killed (replayed over the 128k measurement, the largest of 4 with a
 * 3× margin left every batch at least half its window; 7.8× on average).
 */

/** One batch (or a whole request) the server was seen reading. */
interface Observation {
  /** Milliseconds per prompt token, averaged over the batch. */
  msPerToken: number;
  /** The batch's mean depth (tokens before each of its tokens): under a linear cost, its average cost is the cost there. */
  midDepth: number;
}

/** llama-server's default `--batch-size`: what a batch is before one has been seen. */
export const DEFAULT_BATCH_TOKENS = 2048;
/** Smaller observations are mostly fixed per-request cost, not reading: they would only loosen the bound. */
const MIN_OBSERVED_TOKENS = 256;
/** Observations kept: recent ones describe the server (and the machine's load) as it is now. */
const KEEP = 4;

export interface BatchWindow {
  /** The silence allowed now. */
  windowMs: number;
  /** The predicted duration of the batch being read, when there is an observation to predict from. */
  predictedMs: number | undefined;
  /** Tokens the batch is expected to hold. */
  batchTokens: number;
}

/** How a run chooses the window while the prompt is being read. */
export interface PaceLimits {
  /** The configured liveness window: the window never shrinks below it. */
  floorMs: number;
  /** The longest silence a prefill batch may ever get: a hung server is still declared dead. */
  ceilingMs: number;
  /** Margin over the prediction, for a machine that is busier now than when it was observed. */
  margin: number;
}

/** The defaults: a 3× margin and a ceiling of 40 windows (200 s for the 5 s default window), at least 10 min for none. */
export function paceLimits(floorMs: number): PaceLimits {
  return { floorMs, ceilingMs: Math.max(floorMs, Math.min(600_000, 40 * floorMs)), margin: 3 };
}

/**
 * What one llama-server has shown of its prompt throughput, shared by every
 * run against it (a request that starts deep needs what earlier ones saw).
 */
export class PrefillPace {
  private readonly seen: Observation[] = [];
  /** The largest step between two progress events seen: the server's n_batch, or a lower bound of it. */
  private batch = 0;
  /** The batch window of each prompt being read now, by the run reading it. */
  private readonly reading = new Map<object, number>();

  /**
   * `run` is reading its prompt and its next batch may take `windowMs`
   * (undefined: it is done reading). Every run against the server waits for
   * that batch: llama-server decodes the tokens of all its slots in one
   * batch, so a stream that is generating on one slot goes as silent as the
   * batch another slot is prefilling.
   */
  setReading(run: object, windowMs: number | undefined): void {
    if (windowMs === undefined) this.reading.delete(run);
    else this.reading.set(run, windowMs);
  }

  /** The longest batch window of the prompts being read now; 0 when none is. */
  get readingWindowMs(): number {
    let w = 0;
    for (const v of this.reading.values()) w = Math.max(w, v);
    return w;
  }

  get batchTokens(): number {
    return this.batch || DEFAULT_BATCH_TOKENS;
  }

  get observations(): number {
    return this.seen.length;
  }

  /**
   * The server read the prompt from depth `from` to `to` in `ms`. `step`:
   * the span was one batch between two progress events, so it also says how
   * big a batch is (the last batch of a prompt is smaller; never larger).
   */
  observe(from: number, to: number, ms: number, step = false): void {
    const tokens = to - from;
    if (!(tokens > 0) || !(ms > 0) || !Number.isFinite(ms)) return;
    if (step) this.batch = Math.max(this.batch, tokens);
    if (tokens < MIN_OBSERVED_TOKENS) return;
    this.seen.push({ msPerToken: ms / tokens, midDepth: from + (tokens - 1) / 2 });
    if (this.seen.length > KEEP) this.seen.shift();
  }

  /** Milliseconds the server should take for `tokens` tokens starting at `depth`; undefined before any observation. */
  predictMs(depth: number, tokens: number): number | undefined {
    if (this.seen.length === 0 || tokens <= 0) return undefined;
    const mid = depth + (tokens - 1) / 2;
    let bound = 0;
    for (const o of this.seen) bound = Math.max(bound, o.msPerToken * Math.max(1, mid / o.midDepth));
    return bound * tokens;
  }

  /**
   * The window for the batch the server reads next, having read `processed`
   * of a `total`-token prompt. Before anything has been observed there is
   * nothing to tell a slow batch from a hung server by, and killing a live
   * one costs a full re-read that would be killed again: the ceiling then.
   */
  windowFor(processed: number, total: number, limits: PaceLimits): BatchWindow {
    const batchTokens = Math.max(1, Math.min(this.batchTokens, total - processed));
    const predictedMs = this.predictMs(processed, batchTokens);
    const want = predictedMs === undefined ? limits.ceilingMs : limits.margin * predictedMs;
    const windowMs = Math.round(Math.min(limits.ceilingMs, Math.max(limits.floorMs, want)));
    return { windowMs, predictedMs, batchTokens };
  }
}
