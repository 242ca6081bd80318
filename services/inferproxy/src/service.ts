import {
  SlotQueue,
  type InferService,
  cancelled,
  type CallContext,
  type CompleteRequest,
  type CountTokensRequest,
  type ImplOf,
  type Logger,
  type SlotActionRequest,
} from "@boxmaker/common";
import type { InferproxyConfig } from "./config.js";
import type { CompletionEventInit } from "./completion/completion-stream.js";
import { CompletionRun } from "./completion/completion-run.js";
import { completeChannel } from "./completion/complete-channel.js";
import { countTokens, type CountTokensInit } from "./count-tokens.js";
import { errorBodyOf, mapHttpError, type ErrorContext } from "./error-mapping.js";
import { mapRequestFailure } from "./failure-mapping.js";
import { HealthMonitor } from "./server-check/health-monitor.js";
import { JsonArrayCheck } from "./completion/json-array-check.js";
import { LlamaClient } from "./upstream/llama-client.js";
import { MessagesMemory, completionBody, openOf } from "./completion/messages-memory.js";
import { PrefillPace } from "./completion/prefill-pace.js";
import { completionBodyParts } from "./completion/request-shaping.js";
import type { SelfTestResult } from "./server-check/self-test.js";
import { requireSelfTest, waitForServer, type ServerGate } from "./server-check/server-gate.js";
import { TemplateProbeRunner } from "./template-probe/template-probe-runner.js";
import { refuseToolsIfUnrendered, templateWarning } from "./template-probe/template-verdict.js";
import { checkSlotAction, slotActionResult, type SlotActionInit } from "./slots/slot-action.js";
import { SlotFiles } from "./slots/slot-files.js";
import { slotFilesReply } from "./slots/slot-files-rpc.js";
import { statusReport, type StatusInit } from "./status-report.js";
import { Throughput } from "./throughput.js";
import { endReasoning, getSlots, postSlotAction, probeSlot } from "./upstream/upstream-calls.js";

export interface InferProxyOptions {
  config: InferproxyConfig;
  log: Logger;
  /** Called after every self-test run; main uses it to send READY=1. */
  onSelfTest?: (result: SelfTestResult) => void;
}

/**
 * InferService: turns gRPC calls into requests to llama-server. It owns what
 * outlives a call (the client, the slot locks, the health monitor) and hands
 * each call to the module that holds its logic.
 */
export class InferProxy {
  readonly client: LlamaClient;
  /**
   * One in-flight request per llama-server slot, waiters first come first
   * served: two requests on one slot would make the server evict one prompt
   * for the other and throw away the KV cache the session depends on.
   */
  readonly locks = new SlotQueue();
  readonly monitor: HealthMonitor;
  /** Parked caches in the slot-save directory: erased on request and held to a size cap. */
  readonly slotFiles: SlotFiles;
  private readonly cfg: InferproxyConfig;
  private readonly log: Logger;
  private anon = 0;
  /** Conversations already checked as JSON arrays: a grown one is checked only in its new messages. */
  private readonly arrayCheck = new JsonArrayCheck();
  private readonly memory = new MessagesMemory();
  /** How fast the server reads prompts, for the liveness window of a prefill batch (prefill-pace.ts). */
  private readonly pace = new PrefillPace();
  /** The server's speed from its own timings, for Status (doctor states budgets in minutes with it). */
  private readonly throughput = new Throughput();
  /** The template probe, re-run at every self-test (template-probe-runner.ts). */
  private readonly probe: TemplateProbeRunner;

  constructor(o: InferProxyOptions) {
    this.cfg = o.config;
    this.log = o.log;
    this.slotFiles = new SlotFiles(o.config.slot_files.dir, o.config.slot_files.max_bytes, o.log);
    const timeoutMs = Math.min(o.config.request_timeout_ms, Math.max(1000, o.config.health_poll_ms));
    this.monitor = new HealthMonitor({
      contract: o.config.contract,
      contracts: o.config.contracts,
      pollMs: o.config.health_poll_ms,
      timeoutMs,
      log: o.log,
      onSelfTest: (r) => {
        this.probe.start(this.monitor.props);
        o.onSelfTest?.(r);
      },
    });
    // Every new connection is checked against the contract before anything is sent on it.
    this.client = new LlamaClient(o.config.upstream, {
      onProps: (res) => this.monitor.checkConnection(res),
      timeoutMs: o.config.request_timeout_ms,
    });
    this.probe = new TemplateProbeRunner(o.config.upstream, o.config.request_timeout_ms, o.log);
  }

  /** Runs the first health check and self-test, then keeps polling. */
  start(): Promise<void> {
    return this.monitor.start(this.client);
  }

  async close(): Promise<void> {
    this.monitor.stop();
    await this.client.close();
    await this.probe.close();
  }

  impl(): ImplOf<typeof InferService> {
    return {
      complete: (req, ctx) => this.complete(req, ctx),
      completeChannel: (requests, ctx) => completeChannel(requests, ctx, (req, c) => this.complete(req, c)),
      status: () => this.status(),
      slotAction: (req, ctx) => this.slotAction(req, ctx),
      slotFiles: (req) => slotFilesReply(this.slotFiles, req),
      countTokens: (req, ctx) => this.countTokens(req, ctx),
    };
  }

  /** Counts with the server's tokenizer; not under a slot lock: tokenizing holds no slot. */
  async countTokens(req: CountTokensRequest, ctx: CallContext): Promise<CountTokensInit> {
    requireSelfTest(this.gate);
    const errCtx = this.errCtx("token count");
    try {
      return await countTokens(req, {
        client: this.client,
        timeoutMs: this.cfg.request_timeout_ms,
        signal: ctx.signal,
        ctx: errCtx,
      });
    } catch (err) {
      this.failWith(err, errCtx, ctx.signal);
    }
  }

  /** A failed server call as the RpcError it means; a server gone away is marked down on the way. */
  private failWith(err: unknown, errCtx: ErrorContext, signal: AbortSignal): never {
    const f = mapRequestFailure(err, errCtx, this.servedModel());
    if (f?.serverDown) this.monitor.markDown();
    if (f) throw f.error;
    if (signal.aborted) throw cancelled();
    throw err;
  }

  private errCtx(what: string, slot?: number): ErrorContext {
    return { upstream: this.client.label, what, slot, retryAfterMs: this.cfg.health_poll_ms };
  }

  private get totalSlots(): number {
    return this.monitor.selfTest.expectedTotalSlots;
  }

  /** The server's health as calls are let through on it (server-gate.ts). */
  private get gate(): ServerGate {
    return { monitor: this.monitor, upstream: this.client.label, retryAfterMs: this.cfg.health_poll_ms, log: this.log };
  }

  private servedModel(): string {
    const props = this.monitor.props;
    return props?.model_path ?? props?.model_alias ?? "";
  }

  async *complete(req: CompleteRequest, ctx: CallContext): AsyncGenerator<CompletionEventInit> {
    const spliced = req.afterMessagesToken ? this.memory.splice(req.afterMessagesToken, req.messagesJson) : undefined;
    const { head, tail } = completionBodyParts(
      { ...req, messagesChecked: spliced !== undefined },
      { sampling: this.cfg.sampling, maxTokens: this.cfg.max_tokens, totalSlots: this.totalSlots },
      this.arrayCheck,
    );
    // Checked now (completionBodyParts throws otherwise): the next request may send only what it adds.
    const body = completionBody(head, spliced ?? openOf(req.messagesJson), tail);
    if (req.waitForServerMs > 0) await waitForServer(this.gate, req.waitForServerMs, ctx.signal);
    requireSelfTest(this.gate);
    await this.probe.settled(this.cfg.request_timeout_ms);
    refuseToolsIfUnrendered(this.probe.result, req.toolsJson, this.servedModel());
    const holder = req.requestId || `anonymous-${++this.anon}`;
    const release = await this.locks.acquire(req.slot, holder, ctx.signal).catch((err: unknown) => {
      throw ctx.signal.aborted ? cancelled("cancelled while waiting for the slot") : err;
    });
    // request-shaping refused a slot the server does not have.
    const slot = req.slot;
    // A probe must answer well inside the window it is judging.
    const probeTimeoutMs = Math.max(
      100,
      Math.min(this.cfg.request_timeout_ms, Math.floor(this.cfg.liveness_timeout_ms / 2)),
    );
    const run = new CompletionRun(
      {
        body: body.chunks,
        thinkingCapTokens: req.thinkingCapTokens,
        livenessWindowMs: this.cfg.liveness_timeout_ms,
        errCtx: this.errCtx("completion", req.slot),
        signal: ctx.signal,
      },
      {
        send: (b, signal) => this.client.stream("/v1/chat/completions", b, signal),
        probeSlot: (signal) => probeSlot(this.client, slot, probeTimeoutMs, signal),
        endReasoning: (id) => endReasoning(this.client, id, this.cfg.request_timeout_ms),
        markDown: () => this.monitor.markDown(),
        recheck: () => void this.monitor.check(),
        servedModel: () => this.servedModel(),
        pace: this.pace,
        log: this.log.child({ request_id: holder, slot: req.slot }),
      },
    );
    try {
      for await (const ev of run.events()) {
        if (ev.event?.case === "final") {
          this.throughput.observe(ev.event.value.timings);
          ev.event.value.messagesToken = this.memory.remember(body.held, req.afterMessagesToken);
          ev.event.value.templateWarning = templateWarning(this.probe.result);
        }
        yield ev;
      }
    } finally {
      release();
    }
  }

  async status(): Promise<StatusInit> {
    // The poll stretches while the server is quiet: what status reports is checked now.
    await this.monitor.fresh();
    await this.probe.settled(5_000);
    let slotsBody: unknown;
    if (this.monitor.state === "ok") {
      try {
        const res = await getSlots(this.client, this.cfg.request_timeout_ms);
        if (res.status === 200) slotsBody = res.json;
      } catch (err) {
        this.log.debug({ err }, "GET /slots failed");
      }
    }
    return statusReport({
      state: this.monitor.state,
      verified: this.monitor.verified,
      selfTest: this.monitor.selfTest,
      props: this.monitor.props,
      upstream: this.client.label,
      totalSlots: this.totalSlots,
      slotsBody,
      templateProbe: this.probe.result,
      throughput: this.throughput.report(),
      holding: (id) => ({ slot: id, heldBy: this.locks.holder(id) ?? "", waiting: this.locks.waiting(id).length }),
    });
  }

  async slotAction(req: SlotActionRequest, ctx: CallContext): Promise<SlotActionInit> {
    const action = checkSlotAction(req, this.totalSlots);
    const errCtx = this.errCtx(`slot ${action.action}`, req.slot);
    // Saving or erasing under a running completion would capture or destroy a half-written cache.
    const release = await this.locks.acquire(req.slot, `slot-${action.action}`, ctx.signal);
    try {
      const res = await postSlotAction(this.client, action, this.cfg.slot_action_timeout_ms, ctx.signal);
      if (res.status !== 200) throw mapHttpError(res.status, errorBodyOf(res.json, res.text), errCtx);
      const result = slotActionResult(req.slot, res.json);
      if (action.action === "save") result.evicted = await this.slotFiles.afterSave(action.filename);
      if (action.action === "restore") await this.slotFiles.touch(action.filename);
      return result;
    } catch (err) {
      this.failWith(err, errCtx, ctx.signal);
    } finally {
      release();
    }
  }
}
