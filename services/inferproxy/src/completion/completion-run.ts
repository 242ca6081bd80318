import { cancelled, type Logger } from "@boxmaker/common";
import { CompletionAssembler, type CompletionEventInit } from "./completion-stream.js";
import { coalesceEvents } from "./event-coalescing.js";
import { type ErrorContext, errorBodyOf, mapHttpError } from "../error-mapping.js";
import { LivenessTimeout, StreamProtocolError, ThinkingCapRefused } from "../errors.js";
import { mapRequestFailure, mapRunFailure } from "../failure-mapping.js";
import { LivenessWatchdog, type SlotSample } from "./liveness.js";
import type { RequestBody, StreamResponse } from "../upstream/llama-client.js";
import { PrefillPace, paceLimits, type PaceLimits } from "./prefill-pace.js";
import { SseParser } from "./sse-parser.js";
import { type ControlOutcome, ThinkingCapControl } from "./thinking-cap.js";

const CAP_ANSWERED = Symbol("thinking cap answered");

/** Everything a run does to the world, behind one interface: a test drives a run with a fake. */
export interface RunDeps {
  /** Starts `POST /v1/chat/completions` with this body; resolves once the response headers are in. */
  send(body: RequestBody, signal: AbortSignal): Promise<StreamResponse>;
  /** `GET /slots` for the run's slot (liveness); undefined when the server cannot tell. */
  probeSlot(signal: AbortSignal): Promise<SlotSample | undefined>;
  /** `reasoning_end` for the running completion; never rejects. */
  endReasoning(completionId: string): Promise<ControlOutcome>;
  /** The request showed the server gone. */
  markDown(): void;
  /** The server answered 503: check its health now rather than at the next poll. */
  recheck(): void;
  /** The model the server that answered says it serves, for a contract refusal. */
  servedModel(): string;
  /** What the server has shown of its prompt throughput, shared by the runs against it; absent: this run's own. */
  pace?: PrefillPace;
  log: Logger;
}

export interface RunParams {
  /** The request body, already shaped and checked (request-shaping.ts, messages-memory.ts). */
  body: RequestBody;
  thinkingCapTokens: number;
  livenessWindowMs: number;
  errCtx: ErrorContext;
  /** The caller's cancellation. */
  signal: AbortSignal;
}

/**
 * One completion request, from sending it to the final (or partial) message.
 * The collaborators each hold one concern: the assembler the turn's content,
 * the watchdog liveness, the cap control the thinking cap, failure-mapping.ts
 * the status a failure becomes. The run only sequences them. Its liveness
 * clock starts when it is made, so it is made when the request is to start.
 */
export class CompletionRun {
  private readonly asm = new CompletionAssembler();
  private readonly upstream = new AbortController();
  private readonly cap: ThinkingCapControl;
  private readonly watchdog: LivenessWatchdog;
  /** Whether a 200 stream began: before that there is nothing partial to hand back. */
  private streaming = false;
  /** Whether the stream finished; only then may its connection go back to the pool. */
  private clean = false;
  private readonly pace: PrefillPace;
  private readonly limits: PaceLimits;
  /** The last prompt_progress event: the next one says how long the batch between them took. */
  private lastProgress: { processed: number; timeMs: number } | undefined;
  /** The window in effect when the watchdog gave up, for the status. */
  private deadWindowMs: number | undefined;

  constructor(
    private readonly p: RunParams,
    private readonly deps: RunDeps,
  ) {
    this.cap = new ThinkingCapControl(
      p.thinkingCapTokens,
      (id) => deps.endReasoning(id),
      (o) => this.upstream.abort(new ThinkingCapRefused(o.message)),
    );
    this.pace = deps.pace ?? new PrefillPace();
    this.limits = paceLimits(p.livenessWindowMs);
    // Started here: the wait for the response headers is watched too.
    this.watchdog = new LivenessWatchdog({
      windowMs: p.livenessWindowMs,
      // A batch being read, this run's or another slot's (the server decodes them together), may be longer.
      currentWindowMs: () => Math.max(p.livenessWindowMs, this.pace.readingWindowMs),
      probe: (signal) => deps.probeSlot(signal),
      onDead: (silent, why) => {
        this.deadWindowMs = this.watchdog.windowMs;
        this.upstream.abort(new LivenessTimeout(silent, why));
      },
      onBusy: (silent, smp) =>
        deps.log.debug(
          { silent_ms: Math.round(silent), n_decoded: smp.decoded },
          "stream silent but the slot is decoding; waiting",
        ),
    });
  }

  /**
   * The events for the caller; ends with `final`, or with `partial` (when anything arrived) and a
   * thrown RpcError — a cancel included: a caller that reads on after cancelling gets what was streamed.
   */
  async *events(): AsyncGenerator<CompletionEventInit> {
    const onCancel = () => this.upstream.abort(this.p.signal.reason);
    this.p.signal.addEventListener("abort", onCancel, { once: true });
    try {
      const res = await this.open();
      this.streaming = true;
      yield* this.relay(res.body);
      this.watchdog.stop();
      if (!this.asm.finished) throw new StreamProtocolError("llama-server ended the stream without a finish_reason");
      // The completion finished; the control answer still belongs in the turn's record.
      await this.cap.settled();
      yield* this.capEvent();
      this.clean = true;
      yield { event: { case: "final", value: this.asm.message() } };
    } catch (err) {
      yield* this.fail(err);
    } finally {
      this.watchdog.stop();
      this.pace.setReading(this, undefined);
      this.p.signal.removeEventListener("abort", onCancel);
      // A finished stream leaves its connection to the pool; anything else must not be reused.
      if (!this.clean) this.upstream.abort(new Error("completion ended"));
    }
  }

  /** Sends the request; a failure before a 200 stream began is thrown as its RpcError. */
  private async open(): Promise<StreamResponse> {
    const ctx = this.p.errCtx;
    let res: StreamResponse;
    try {
      res = await this.deps.send(this.p.body, this.upstream.signal);
    } catch (err) {
      const f = mapRequestFailure(err, ctx, this.deps.servedModel());
      if (!f) throw err;
      if (f.serverDown) this.deps.markDown();
      throw f.error;
    }
    this.watchdog.kick();
    if (res.status === 200) return res;
    const text = await res.body.text();
    const mapped = mapHttpError(res.status, errorBodyOf(parseOrUndefined(text), text), ctx);
    if (res.status === 503) this.deps.recheck();
    throw mapped;
  }

  /**
   * Chunks in, events out. The thinking-cap event goes out as soon as the
   * control call answers, not with the next chunk: after reasoning_end the
   * server's parser may hold output back for a long time.
   */
  private async *relay(body: AsyncIterable<Buffer>): AsyncGenerator<CompletionEventInit> {
    const parser = new SseParser();
    const chunks = body[Symbol.asyncIterator]();
    let next: Promise<IteratorResult<Buffer>> | undefined;
    for (;;) {
      if (!next) {
        next = chunks.next();
        next.catch(() => undefined); // awaited below; a cancelled turn may leave it pending
      }
      const answer = this.cap.unreportedAnswer;
      const r = answer ? await Promise.race([next, answer.then((): typeof CAP_ANSWERED => CAP_ANSWERED)]) : await next;
      if (r === CAP_ANSWERED) {
        yield* this.capEvent();
        continue;
      }
      next = undefined;
      if (r.done) break;
      this.watchdog.kick();
      yield* this.onPayloads(parser.push(r.value));
      // Time spent waiting on a slow gRPC reader is not upstream silence.
      this.watchdog.kick();
    }
    yield* this.onPayloads(parser.end());
  }

  /** The payloads of one upstream read: their events go on as few messages as they can (event-coalescing.ts). */
  private *onPayloads(payloads: string[]): Generator<CompletionEventInit> {
    const events: CompletionEventInit[] = [];
    try {
      for (const data of payloads) {
        const r = this.asm.onData(data);
        for (const ev of r.events) if (ev.event?.case === "progress") this.onProgress(ev.event.value);
        events.push(...r.events);
        if (this.cap.onReasoningDeltas(r.reasoningDeltas, this.asm.completionId)) {
          this.deps.log.info(
            { reasoning_tokens: this.cap.firedAtTokens, completion_id: this.asm.completionId },
            "thinking cap reached",
          );
        }
      }
    } catch (err) {
      // An error object mid-read: what came before it in the read still reaches the caller first.
      yield* coalesceEvents(events);
      throw err;
    }
    yield* coalesceEvents(events);
    yield* this.capEvent();
  }

  /**
   * A batch of the prompt was read: it teaches the pace how fast the server
   * reads at this depth, and sets the window for the next batch (or back to
   * the configured one once the prompt is read).
   */
  private onProgress(p: { total?: number; processed?: number; timeMs?: number }): void {
    const processed = p.processed ?? 0;
    const total = p.total ?? 0;
    const timeMs = p.timeMs ?? 0;
    const prev = this.lastProgress;
    if (prev && processed > prev.processed) this.pace.observe(prev.processed, processed, timeMs - prev.timeMs, true);
    this.lastProgress = { processed, timeMs };
    if (processed >= total) {
      this.pace.setReading(this, undefined);
    } else {
      const w = this.pace.windowFor(processed, total, this.limits);
      this.pace.setReading(this, w.windowMs);
      if (w.windowMs > this.p.livenessWindowMs) {
        this.deps.log.debug(
          {
            processed,
            total,
            batch_tokens: w.batchTokens,
            predicted_ms: w.predictedMs === undefined ? null : Math.round(w.predictedMs),
            window_ms: w.windowMs,
          },
          "prompt batch: liveness window",
        );
      }
    }
    this.watchdog.rearm();
  }

  private *capEvent(): Generator<CompletionEventInit> {
    const ev = this.cap.takeEvent(this.asm.completionId);
    if (ev) yield ev;
  }

  /** What the caller still gets when the run fails, then the failure as its status. */
  private async *fail(err: unknown): AsyncGenerator<CompletionEventInit, never> {
    this.watchdog.stop();
    const reason: unknown = this.upstream.signal.aborted ? this.upstream.signal.reason : undefined;
    if (this.p.signal.aborted) {
      // What was streamed stays the caller's: loopd keeps an answer cut off by Ctrl-C in the
      // session (the server's cache holds it too). The server sends no timings for a stopped
      // generation, so they are counted from the stream.
      if (this.streaming) yield { event: { case: "partial", value: this.asm.message("cancelled", true) } };
      throw cancelled("cancelled by client");
    }
    const f = mapRunFailure(err, reason, {
      ...this.p.errCtx,
      livenessWindowMs: this.deadWindowMs ?? this.p.livenessWindowMs,
      completionId: this.asm.completionId,
    });
    if (f.serverDown) this.deps.markDown();
    if (f.cutBy === "thinking_cap") yield* this.capEvent();
    // Whatever arrived is still the caller's to keep (infer.proto): a partial right before the status.
    if (this.streaming || f.cutBy === "liveness") {
      yield { event: { case: "partial", value: this.asm.message("aborted") } };
    }
    this.deps.log.warn({ code: f.error.statusName, err: f.error.message }, "completion failed");
    throw f.error;
  }
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
