// A llama.cpp llama-server simulator for tests: the recorded protocol
// (test/fixtures/llama-server), a prompt cache that charges for every changed
// byte, and model output scripted by the test.

import { createHash } from "node:crypto";
import { rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { createSimServer } from "./server.js";
import { resolveConfig, SimState, type ControlLogEntry, type RequestLogEntry } from "./state.js";
import type { Turn } from "./script.js";
import type { ThinkBlocks } from "./render.js";

export { countTokens, tokenize, tokenIds, pieceId, commonPrefixLength } from "./tokens.js";
export { renderMessages, renderPrompt, renderAssistantBody, type ChatMessage, type ThinkBlocks } from "./render.js";
export { DEFAULT_CHAT_TEMPLATE } from "./props.js";
export { defaultTurn, validateTurn, type Turn, type ScriptedToolCall, type StreamError } from "./script.js";
export type { RequestLogEntry, ControlLogEntry } from "./state.js";
export type { Timings, PromptProgress } from "./sse.js";

export interface LlamaSimOptions {
  /** Listen on this Unix socket (a stale file is removed first). */
  socketPath?: string;
  /** Listen on 127.0.0.1:port instead (0 picks a free port). Default when no socketPath: 0. */
  port?: number;
  totalSlots?: number;
  /** Context per slot. */
  nCtx?: number;
  chatTemplate?: string;
  buildInfo?: string;
  modelPath?: string;
  /** Directory for slot save/restore; without it slot actions answer 501 like the real server. */
  slotSavePath?: string;
  /** Start in the loading state: every endpoint answers 503 until setLoading(false). */
  loading?: boolean;
  /** Which assistant turns keep their think block when re-rendered. Default "all" (production template). */
  thinkBlocks?: ThinkBlocks;
  /** Prompt tokens per prefill batch; one progress event each. Default 2048. */
  batchSize?: number;
}

/** What inferproxy's `contract` config must say to accept this simulator (its self-test). */
export interface SimContract {
  template_sha256: string;
  n_ctx_per_slot: number;
  total_slots: number;
}

export interface LlamaSim {
  /** http://127.0.0.1:port for TCP; http://localhost for a socket (use an undici Agent with socketPath). */
  readonly url: string;
  readonly socketPath: string | undefined;
  readonly port: number | undefined;
  readonly contract: SimContract;
  /** Queue a scripted turn; with a slot, only a request on that slot plays it. */
  enqueue(turn: Turn, slot?: number): void;
  readonly requests: readonly RequestLogEntry[];
  readonly controlCalls: readonly ControlLogEntry[];
  /** Chat-completion requests only, in arrival order. */
  readonly completions: readonly RequestLogEntry[];
  readonly pendingTurns: number;
  setLoading(loading: boolean): void;
  /** The token pieces slot `slot` holds in its cache. */
  slotTokens(slot: number): readonly string[];
  isProcessing(slot: number): boolean;
  /** Resolves once the slot has no running or waiting task. */
  waitIdle(slot: number): Promise<void>;
  /** Per slot, the most chat-completion requests ever in flight at once (waiting or running). 1 means no overlap. */
  readonly maxConcurrentPerSlot: readonly number[];
  /** Forget scripts, logs, slot caches and concurrency records. Loading state and running completions are untouched. */
  reset(): void;
  /**
   * The process dies and is started again: every connection is dropped, the
   * socket answers nothing for `downMs`, then every endpoint is 503 for
   * `loadingMs` (the model loading), with every slot's cache lost. Resolves
   * once it answers again. A scripted turn's `crashAfterTokens` does the same.
   */
  restart(o?: { downMs?: number; loadingMs?: number }): Promise<void>;
  /** Restarts so far (scripted crashes included). */
  readonly restarts: number;
  /** Resolves once the latest restart has the server listening again. */
  whenUp(): Promise<void>;
  close(): Promise<void>;
}

export async function startLlamaSim(opts: LlamaSimOptions = {}): Promise<LlamaSim> {
  const config = resolveConfig({
    ...(opts.totalSlots !== undefined ? { totalSlots: opts.totalSlots } : {}),
    ...(opts.nCtx !== undefined ? { nCtx: opts.nCtx } : {}),
    ...(opts.chatTemplate !== undefined ? { chatTemplate: opts.chatTemplate } : {}),
    ...(opts.buildInfo !== undefined ? { buildInfo: opts.buildInfo } : {}),
    ...(opts.modelPath !== undefined ? { modelPath: opts.modelPath } : {}),
    ...(opts.slotSavePath !== undefined ? { slotSavePath: opts.slotSavePath } : {}),
    ...(opts.thinkBlocks !== undefined ? { thinkBlocks: opts.thinkBlocks } : {}),
    ...(opts.batchSize !== undefined ? { batchSize: opts.batchSize } : {}),
  });
  if (config.totalSlots < 1) throw new Error("totalSlots must be at least 1");
  const state = new SimState(config, opts.loading ?? false);
  const server = createSimServer(state);

  const socketPath = opts.socketPath;
  if (socketPath) {
    // llama-server refuses to start on a stale socket; the simulator just clears it.
    await rm(socketPath, { force: true });
  }
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    if (socketPath) server.listen(socketPath, () => resolve());
    else server.listen(opts.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = socketPath ? undefined : (server.address() as AddressInfo).port;
  const slotAt = (i: number) => {
    const s = state.slots[i];
    if (!s) throw new Error(`no slot ${i}`);
    return s;
  };
  let closed: Promise<void> | undefined;
  let restarts = 0;
  let up: Promise<void> = Promise.resolve();
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      if (socketPath) server.listen(socketPath, () => resolve());
      else server.listen(port, "127.0.0.1", () => resolve());
    });
  const restart = (o: { downMs?: number; loadingMs?: number } = {}): Promise<void> => {
    restarts++;
    up = (async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      state.lose();
      await new Promise((r) => setTimeout(r, o.downMs ?? 0));
      if (closed) return;
      // Completions cut by the crash may have written their slot back meanwhile: a new process has nothing.
      state.lose();
      if (o.loadingMs) state.loading = true;
      await listen();
      if (o.loadingMs) setTimeout(() => (state.loading = false), o.loadingMs);
      await new Promise((r) => setTimeout(r, o.loadingMs ?? 0));
    })();
    return up;
  };
  state.onCrash = (o) => void restart(o);

  return {
    url: socketPath ? "http://localhost" : `http://127.0.0.1:${port}`,
    socketPath,
    port,
    contract: {
      template_sha256: createHash("sha256").update(config.chatTemplate).digest("hex"),
      n_ctx_per_slot: config.nCtx,
      total_slots: config.totalSlots,
    },
    enqueue: (turn, slot) => state.script.enqueue(turn, slot),
    get requests() {
      return state.requests;
    },
    get controlCalls() {
      return state.controlCalls;
    },
    get completions() {
      return state.requests.filter((r) => r.path === "/v1/chat/completions" || r.path === "/chat/completions");
    },
    get pendingTurns() {
      return state.script.pending;
    },
    setLoading: (b) => {
      state.loading = b;
    },
    slotTokens: (i) => slotAt(i).tokens,
    isProcessing: (i) => slotAt(i).processing,
    waitIdle: (i) => slotAt(i).waitIdle(),
    get maxConcurrentPerSlot() {
      return state.maxConcurrentPerSlot();
    },
    reset: () => state.reset(),
    restart,
    get restarts() {
      return restarts;
    },
    whenUp: () => up,
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }).then(async () => {
        if (socketPath) await rm(socketPath, { force: true });
      });
      return closed;
    },
  };
}
