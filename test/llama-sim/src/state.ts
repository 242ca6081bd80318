// Everything the simulated server knows: configuration, slots, the script,
// the logs tests read, and the completions a control call can reach.

import type { ThinkBlocks } from "./render.js";
import { ScriptQueue } from "./script.js";
import { Slot } from "./slot-cache.js";
import type { Timings } from "./sse.js";
import type { Turn } from "./script.js";
import { DEFAULT_CHAT_TEMPLATE } from "./props.js";

export interface SimConfig {
  totalSlots: number;
  /** Per slot, as /props default_generation_settings.n_ctx reports it. */
  nCtx: number;
  chatTemplate: string;
  buildInfo: string;
  modelPath: string;
  slotSavePath: string | undefined;
  thinkBlocks: ThinkBlocks;
  /** Prompt tokens per prefill batch (llama-server's n_batch); one progress event each. */
  batchSize: number;
}

export function resolveConfig(o: Partial<SimConfig> = {}): SimConfig {
  return {
    totalSlots: o.totalSlots ?? 3,
    nCtx: o.nCtx ?? 32768,
    chatTemplate: o.chatTemplate ?? DEFAULT_CHAT_TEMPLATE,
    buildInfo: o.buildInfo ?? "b1-llamasim",
    modelPath: o.modelPath ?? "llama-sim.gguf",
    slotSavePath: o.slotSavePath,
    thinkBlocks: o.thinkBlocks ?? "all",
    batchSize: o.batchSize ?? 2048,
  };
}

export interface RequestLogEntry {
  seq: number;
  method: string;
  path: string;
  /** The body exactly as received. */
  rawBody: string;
  /** The parsed JSON body; undefined when empty or malformed. */
  body: unknown;
  receivedAt: number;
  /** performance.now() at arrival and at the first content token written: for stage timings in benchmarks. */
  receivedHrMs: number;
  firstContentHrMs?: number;
  status?: number;
  /** Chat completions only from here on. */
  completionId?: string;
  stream?: boolean;
  slot?: number;
  promptTokens?: number;
  cacheN?: number;
  timings?: Timings;
  finishReason?: string | null;
  /** How the request ended: completed, error_in_stream, dropped (scripted), aborted (client left), http_error. */
  outcome?: "completed" | "error_in_stream" | "dropped" | "aborted" | "http_error";
  /** The turn the completion played (the scripted one or the default responder's). */
  turn?: Turn;
  /** What was actually streamed, which is what a client would echo back. */
  output?: { content: string; reasoning: string; toolCalls: Array<{ id: string; name: string; arguments: string }> };
  finishedAt?: number;
}

export interface ControlLogEntry {
  at: number;
  body: unknown;
  id?: string;
  action?: string;
  status: number;
  response: unknown;
}

export interface ActiveCompletion {
  id: string;
  reasoningControl: boolean;
  /** Returns false when the completion does not accept reasoning control. */
  endReasoning(): boolean;
}

export class SimState {
  readonly slots: Slot[];
  readonly script = new ScriptQueue();
  requests: RequestLogEntry[] = [];
  controlCalls: ControlLogEntry[] = [];
  readonly active = new Map<string, ActiveCompletion>();
  loading: boolean;
  readonly startedAt = Math.floor(Date.now() / 1000);
  private seq = 0;
  private taskSeq = 0;

  constructor(
    readonly config: SimConfig,
    loading = false,
  ) {
    this.loading = loading;
    this.slots = Array.from({ length: config.totalSlots }, (_, i) => new Slot(i, config.nCtx));
  }

  logRequest(e: Omit<RequestLogEntry, "seq" | "receivedAt" | "receivedHrMs">): RequestLogEntry {
    const entry: RequestLogEntry = { seq: ++this.seq, receivedAt: Date.now(), receivedHrMs: performance.now(), ...e };
    this.requests.push(entry);
    return entry;
  }

  nextTaskId(): number {
    return ++this.taskSeq;
  }

  maxConcurrentPerSlot(): number[] {
    return this.slots.map((s) => s.maxInFlight);
  }

  /** Set by the server's owner (index.ts): what a crash does to the process. */
  onCrash: ((o: { downMs: number; loadingMs: number }) => void) | undefined;
  /** Crashes so far; a completion started before the last one belongs to a dead process. */
  crashes = 0;

  /** The process dies (a scripted crash): see Turn.crashAfterTokens. */
  crash(o: { downMs: number; loadingMs: number }): void {
    this.crashes++;
    this.onCrash?.(o);
  }

  /** What a restarted process has lost: every slot's cache and task. */
  lose(): void {
    for (const s of this.slots) s.resetState();
    this.active.clear();
  }

  reset(): void {
    this.script.clear();
    this.requests = [];
    this.controlCalls = [];
    for (const s of this.slots) s.resetState();
  }
}
