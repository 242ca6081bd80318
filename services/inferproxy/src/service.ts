import {
  type InferService,
  RpcError,
  SlotActionKind,
  Status,
  cancelled,
  deadlineExceeded,
  failedPrecondition,
  internal,
  invalidArgument,
  messageOf,
  type CallContext,
  type CompleteRequest,
  type ImplOf,
  type InferStatusResponseSchema,
  type Logger,
  type SlotActionRequest,
  type SlotActionResponseSchema,
} from "@boxmaker/common";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { InferproxyConfig } from "./config.js";
import { CompletionAssembler, type CompletionEventInit } from "./completion-stream.js";
import { errorBodyOf, mapConnectError, mapHttpError, mapStreamError, type ErrorContext } from "./error-mapping.js";
import { HealthMonitor, refusalMessage } from "./health-monitor.js";
import {
  LivenessTimeout,
  ServerCheckError,
  StreamErrorObject,
  StreamProtocolError,
  ThinkingCapRefused,
  UpstreamConnectError,
  UpstreamTimeoutError,
} from "./errors.js";
import { LlamaClient, type StreamResponse } from "./llama-client.js";
import { LivenessWatchdog, slotSample, type SlotSample } from "./liveness.js";
import { JsonArrayCheck } from "./json-array-check.js";
import { buildCompletionBody } from "./request-shaping.js";
import type { SelfTestResult } from "./self-test.js";
import { SlotLocks } from "./slot-lock.js";
import { SseParser } from "./sse-parser.js";
import { ThinkingCap, controlOutcome, type ControlOutcome } from "./thinking-cap.js";

export interface InferProxyOptions {
  config: InferproxyConfig;
  log: Logger;
  /** Called after every self-test run; main uses it to send READY=1. */
  onSelfTest?: (result: SelfTestResult) => void;
}

type StatusInit = MessageInitShape<typeof InferStatusResponseSchema>;
type SlotActionInit = MessageInitShape<typeof SlotActionResponseSchema>;

/** InferService: maps gRPC calls onto the pure modules and the llama-server client. */
export class InferProxy {
  readonly client: LlamaClient;
  readonly locks = new SlotLocks();
  readonly monitor: HealthMonitor;
  private readonly cfg: InferproxyConfig;
  private readonly log: Logger;
  private anon = 0;
  /** Conversations already checked as JSON arrays: a grown one is checked only in its new messages. */
  private readonly arrayCheck = new JsonArrayCheck();

  constructor(o: InferProxyOptions) {
    this.cfg = o.config;
    this.log = o.log;
    const timeoutMs = Math.min(o.config.request_timeout_ms, Math.max(1000, o.config.health_poll_ms));
    this.monitor = new HealthMonitor({
      contract: o.config.contract,
      pollMs: o.config.health_poll_ms,
      timeoutMs,
      log: o.log,
      onSelfTest: o.onSelfTest,
    });
    // Every new connection is checked against the contract before anything is sent on it.
    this.client = new LlamaClient(o.config.upstream, {
      onProps: (res) => this.monitor.checkConnection(res),
      timeoutMs: o.config.request_timeout_ms,
    });
  }

  /** Runs the first health check and self-test, then keeps polling. */
  start(): Promise<void> {
    return this.monitor.start(this.client);
  }

  async close(): Promise<void> {
    this.monitor.stop();
    await this.client.close();
  }

  impl(): ImplOf<typeof InferService> {
    return {
      complete: (req, ctx) => this.complete(req, ctx),
      status: () => this.status(),
      slotAction: (req, ctx) => this.slotAction(req, ctx),
    };
  }

  private errCtx(what: string, slot?: number): ErrorContext {
    return { upstream: this.client.label, what, slot, retryAfterMs: this.cfg.health_poll_ms };
  }

  private get totalSlots(): number {
    return this.cfg.contract.total_slots;
  }

  /** Completions against a server that fails the contract would poison the session log (see also checkError). */
  private requireSelfTest(): void {
    const st = this.monitor.selfTest;
    if (!st.ran) {
      throw new RpcError(
        Status.UNAVAILABLE,
        `llama-server at ${this.client.label} has not passed the start-up self-test yet (state: ${this.monitor.state})`,
        { upstream: this.client.label, retry_after_ms: String(this.cfg.health_poll_ms) },
      );
    }
    // A failed self-test is not refused here: a refused server keeps no connection, so this
    // request's connection is checked afresh (the server may have been swapped back) and
    // refused there if it still does not match.
  }

  private refusal(message?: string): RpcError {
    const props = this.monitor.props;
    return failedPrecondition(message ?? refusalMessage(this.client.label, this.monitor.selfTest, props), {
      upstream: this.client.label,
      reason: "self_test_failed",
      model: props?.model_path ?? props?.model_alias ?? "",
    });
  }

  /** A new connection refused by the contract check (connection-check.ts) → the status a caller can act on. */
  private checkError(err: ServerCheckError): RpcError {
    if (err.kind === "mismatch") return this.refusal(err.message);
    return new RpcError(Status.UNAVAILABLE, err.message, {
      upstream: this.client.label,
      reason: err.kind === "loading" ? "loading" : "unverified",
      retry_after_ms: String(this.cfg.health_poll_ms),
    });
  }

  /** What `GET /slots` says about one slot, for the liveness watchdog; undefined when it cannot tell. */
  private async probeSlot(slot: number, signal: AbortSignal): Promise<SlotSample | undefined> {
    const res = await this.client.json({
      method: "GET",
      path: "/slots",
      timeoutMs: Math.max(100, Math.min(this.cfg.request_timeout_ms, Math.floor(this.cfg.liveness_timeout_ms / 2))),
      signal,
    });
    return res.status === 200 ? slotSample(res.json, slot % this.totalSlots) : undefined;
  }

  async *complete(req: CompleteRequest, ctx: CallContext): AsyncGenerator<CompletionEventInit> {
    const body = buildCompletionBody(
      {
        slot: req.slot,
        messagesJson: req.messagesJson,
        toolsJson: req.toolsJson,
        sampling: req.sampling,
        maxTokens: req.maxTokens,
        thinkingCapTokens: req.thinkingCapTokens,
      },
      { sampling: this.cfg.sampling, maxTokens: this.cfg.max_tokens, totalSlots: this.totalSlots },
      this.arrayCheck,
    );
    this.requireSelfTest();
    const holder = req.requestId || `anonymous-${++this.anon}`;
    const errCtx = this.errCtx("completion", req.slot);
    const release = await this.locks.acquire(req.slot, holder, ctx.signal).catch((err: unknown) => {
      throw ctx.signal.aborted ? cancelled("cancelled while waiting for the slot") : err;
    });

    const upstream = new AbortController();
    const onCancel = () => upstream.abort(ctx.signal.reason);
    ctx.signal.addEventListener("abort", onCancel, { once: true });
    const log = this.log.child({ request_id: holder, slot: req.slot });
    const watchdog = new LivenessWatchdog({
      windowMs: this.cfg.liveness_timeout_ms,
      probe: (signal) => this.probeSlot(req.slot, signal),
      onDead: (silent, why) => upstream.abort(new LivenessTimeout(silent, why)),
      onBusy: (silent, smp) =>
        log.debug(
          { silent_ms: Math.round(silent), n_decoded: smp.decoded },
          "stream silent but the slot is decoding; waiting",
        ),
    });
    const asm = new CompletionAssembler();
    const cap = new ThinkingCap(req.thinkingCapTokens);
    let capOutcome: ControlOutcome | undefined;
    let capPending: Promise<void> | undefined;
    let capReported = false;
    let clean = false;
    // Whether a 200 stream began: before that there is nothing partial to hand back.
    let streaming = false;
    const capEvent = (): CompletionEventInit => {
      capReported = true;
      return {
        event: {
          case: "thinkingCap",
          value: {
            reasoningTokens: cap.firedAtTokens,
            completionId: asm.completionId,
            accepted: capOutcome!.accepted,
            message: capOutcome!.message,
          },
        },
      };
    };

    try {
      let res: StreamResponse;
      try {
        res = await this.client.stream("/v1/chat/completions", body, upstream.signal);
      } catch (err) {
        if (err instanceof UpstreamConnectError) {
          this.monitor.markDown();
          throw mapConnectError(err.cause, errCtx);
        }
        if (err instanceof ServerCheckError) throw this.checkError(err);
        throw err;
      }
      watchdog.kick();
      if (res.status !== 200) {
        const text = await res.body.text();
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        const mapped = mapHttpError(res.status, errorBodyOf(parsed, text), errCtx);
        if (res.status === 503) void this.monitor.check();
        throw mapped;
      }

      streaming = true;
      const parser = new SseParser();
      const handle = function* (this: InferProxy, payloads: string[]): Generator<CompletionEventInit> {
        for (const data of payloads) {
          const r = asm.onData(data);
          yield* r.events;
          for (let i = 0; i < r.reasoningDeltas; i++) {
            if (cap.onReasoningDelta()) {
              log.info({ reasoning_tokens: cap.tokens, completion_id: asm.completionId }, "thinking cap reached");
              capPending = this.endReasoning(asm.completionId).then((o) => {
                capOutcome = o;
                if (!o.accepted) upstream.abort(new ThinkingCapRefused(o.message));
              });
            }
          }
        }
        if (capOutcome && !capReported) yield capEvent();
      }.bind(this);

      // The thinking-cap event goes out as soon as the control call answers, not with the
      // next chunk: after reasoning_end the server's parser may hold output back for a long time.
      const chunks = res.body[Symbol.asyncIterator]();
      let next: Promise<IteratorResult<Buffer>> | undefined;
      for (;;) {
        if (!next) {
          next = chunks.next();
          next.catch(() => undefined); // awaited below; a cancelled turn may leave it pending
        }
        let r: IteratorResult<Buffer> | "cap";
        if (capPending && !capReported) {
          r = await Promise.race([next, capPending.then(() => "cap" as const)]);
          if (r === "cap") {
            if (capOutcome && !capReported) yield capEvent();
            continue;
          }
        } else r = await next;
        next = undefined;
        if (r.done) break;
        watchdog.kick();
        yield* handle(parser.push(r.value));
        // Time spent waiting on a slow gRPC reader is not upstream silence.
        watchdog.kick();
      }
      yield* handle(parser.end());
      watchdog.stop();
      if (!asm.finished) {
        throw new StreamProtocolError("llama-server ended the stream without a finish_reason");
      }
      if (capPending) {
        // The completion finished; the control answer still belongs in the turn's record.
        await capPending;
        if (!capReported) yield capEvent();
      }
      clean = true;
      yield { event: { case: "final", value: asm.message() } };
    } catch (err) {
      watchdog.stop();
      const reason: unknown = upstream.signal.aborted ? upstream.signal.reason : undefined;
      if (ctx.signal.aborted) throw cancelled("cancelled by client");
      const rpc = this.midStreamError(err, reason, errCtx, asm, watchdog);
      if (reason instanceof ThinkingCapRefused && !capReported) yield capEvent();
      // Whatever arrived is still the caller's to keep (infer.proto): a partial right before the status.
      if (streaming || reason instanceof LivenessTimeout) {
        yield { event: { case: "partial", value: asm.message("aborted") } };
      }
      log.warn({ code: rpc.codeName, err: rpc.message }, "completion failed");
      throw rpc;
    } finally {
      watchdog.stop();
      ctx.signal.removeEventListener("abort", onCancel);
      // A finished stream leaves its connection to the pool; anything else must not be reused.
      if (!clean) upstream.abort(new Error("completion ended"));
      release();
    }
  }

  private midStreamError(
    err: unknown,
    reason: unknown,
    errCtx: ErrorContext,
    asm: CompletionAssembler,
    watchdog: LivenessWatchdog,
  ): RpcError {
    if (reason instanceof LivenessTimeout) {
      return deadlineExceeded(
        `llama-server sent nothing for ${Math.round(reason.silentMs)} ms (liveness window ${watchdog.windowMs} ms) ` +
          `and ${reason.why}; the completion was aborted`,
        {
          upstream: errCtx.upstream,
          slot: String(errCtx.slot),
          liveness_timeout_ms: String(watchdog.windowMs),
          silent_ms: String(Math.round(reason.silentMs)),
          liveness_reason: reason.why,
          completion_id: asm.completionId,
        },
      );
    }
    if (reason instanceof ThinkingCapRefused) {
      return new RpcError(
        Status.ABORTED,
        `thinking cap reached but llama-server refused to end reasoning (${reason.message}); the completion was aborted`,
        {
          upstream: errCtx.upstream,
          slot: String(errCtx.slot),
          completion_id: asm.completionId,
          reason: "thinking_cap_refused",
        },
      );
    }
    if (err instanceof RpcError) return err;
    if (err instanceof StreamErrorObject) return mapStreamError(err.body, errCtx);
    if (err instanceof StreamProtocolError) return internal(err.message, { upstream: errCtx.upstream });
    this.monitor.markDown();
    return new RpcError(
      Status.UNAVAILABLE,
      `llama-server at ${errCtx.upstream} dropped the stream mid-completion: ${messageOf(err)}`,
      { upstream: errCtx.upstream, retry_after_ms: String(errCtx.retryAfterMs) },
    );
  }

  /** `reasoning_end` for a running completion; every failure is a refusal with a reason. */
  private async endReasoning(completionId: string): Promise<ControlOutcome> {
    try {
      const res = await this.client.json({
        method: "POST",
        path: "/v1/chat/completions/control",
        body: JSON.stringify({ id: completionId, action: "reasoning_end" }),
        timeoutMs: this.cfg.request_timeout_ms,
      });
      return controlOutcome(res.status, res.json);
    } catch (err) {
      return { accepted: false, message: `control call failed: ${messageOf(err)}` };
    }
  }

  async status(): Promise<StatusInit> {
    const props = this.monitor.props;
    const n = props?.total_slots ?? this.totalSlots;
    const serverSlots = new Map<number, { n_ctx?: number; is_processing?: boolean }>();
    if (this.monitor.state === "ok") {
      try {
        const res = await this.client.json({ method: "GET", path: "/slots", timeoutMs: this.cfg.request_timeout_ms });
        if (res.status === 200 && Array.isArray(res.json)) {
          for (const s of res.json as Array<{ id?: number; n_ctx?: number; is_processing?: boolean }>) {
            if (typeof s.id === "number") serverSlots.set(s.id, s);
          }
        }
      } catch (err) {
        this.log.debug({ err }, "GET /slots failed");
      }
    }
    const ids = new Set<number>([...Array(n).keys(), ...serverSlots.keys()]);
    // A self-test is about the server that answered it: while the server is down or loading,
    // nothing has been checked, whatever the last result was.
    const last = this.monitor.selfTest;
    const st = this.monitor.verified ? last : { ...last, ran: false, passed: false, mismatches: [] };
    return {
      serverState: this.monitor.state,
      buildInfo: props?.build_info ?? "",
      model: props?.model_alias ?? props?.model_path ?? "",
      upstream: this.client.label,
      selfTest: { ...st, checkedAtUnixMs: BigInt(st.checkedAtUnixMs) },
      slots: [...ids]
        .sort((a, b) => a - b)
        .map((id) => {
          const s = serverSlots.get(id);
          const h = this.locks.holding(id);
          return {
            id,
            nCtx: s?.n_ctx ?? props?.default_generation_settings?.n_ctx ?? 0,
            isProcessing: s?.is_processing ?? false,
            heldBy: h.heldBy,
            waiting: h.waiting,
          };
        }),
    };
  }

  async slotAction(req: SlotActionRequest, ctx: CallContext): Promise<SlotActionInit> {
    const action =
      req.action === SlotActionKind.SAVE
        ? "save"
        : req.action === SlotActionKind.RESTORE
          ? "restore"
          : req.action === SlotActionKind.ERASE
            ? "erase"
            : undefined;
    if (!action) throw invalidArgument("slot action must be save, restore or erase", { field: "action" });
    if (req.slot >= this.totalSlots) {
      throw invalidArgument(`slot ${req.slot} does not exist: llama-server has slots 0..${this.totalSlots - 1}`, {
        field: "slot",
      });
    }
    if (action !== "erase" && !/^[A-Za-z0-9._-]+$/.test(req.filename)) {
      // The server resolves the name inside --slot-save-path; a path would be refused or escape it.
      throw invalidArgument(
        `filename must be a plain file name ([A-Za-z0-9._-]+), got ${JSON.stringify(req.filename)}`,
        {
          field: "filename",
        },
      );
    }
    if (action !== "erase" && (req.filename === "." || req.filename === "..")) {
      throw invalidArgument("filename must not be . or ..", { field: "filename" });
    }
    const errCtx = this.errCtx(`slot ${action}`, req.slot);
    // Saving or erasing under a running completion would capture or destroy a half-written cache.
    const release = await this.locks.acquire(req.slot, `slot-${action}`, ctx.signal);
    try {
      const res = await this.client.json({
        method: "POST",
        path: `/slots/${req.slot}?action=${action}`,
        body: action === "erase" ? undefined : JSON.stringify({ filename: req.filename }),
        timeoutMs: this.cfg.slot_action_timeout_ms,
        signal: ctx.signal,
      });
      if (res.status !== 200) throw mapHttpError(res.status, errorBodyOf(res.json, res.text), errCtx);
      const b = (res.json ?? {}) as Record<string, unknown> & { timings?: Record<string, number> };
      const numOf = (k: string) => (typeof b[k] === "number" ? (b[k] as number) : 0);
      return {
        slot: req.slot,
        tokens: numOf("n_saved") || numOf("n_restored") || numOf("n_erased"),
        bytes: BigInt(numOf("n_written") || numOf("n_read")),
        ms: b.timings?.save_ms ?? b.timings?.restore_ms ?? 0,
      };
    } catch (err) {
      if (err instanceof UpstreamConnectError) {
        this.monitor.markDown();
        throw mapConnectError(err.cause, errCtx);
      }
      if (err instanceof ServerCheckError) throw this.checkError(err);
      if (err instanceof UpstreamTimeoutError)
        throw deadlineExceeded(`slot ${action}: ${err.message}`, { upstream: this.client.label });
      if (ctx.signal.aborted) throw cancelled();
      throw err;
    } finally {
      release();
    }
  }
}
