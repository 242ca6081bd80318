// One accepted completion on its slot: prefill with progress events, then the
// scripted turn as token deltas (with its faults), then the slot's cache as the
// real server would leave it.

import type { ServerResponse } from "node:http";
import { completionBody, echoedMessage } from "./completion-body.js";
import { planToolCalls, splitPieces } from "./generation-plan.js";
import { sleep } from "./pacing.js";
import { taskParams } from "./props.js";
import { renderPrompt, type ChatMessage } from "./render.js";
import type { Turn } from "./script.js";
import type { Slot, SlotTaskInfo } from "./slot-cache.js";
import {
  chunk,
  errorBody,
  makeTimings,
  randomId,
  ROLE_DELTA,
  sendJson,
  SseWriter,
  type ChunkBase,
  type PromptProgress,
} from "./sse.js";
import type { RequestLogEntry, SimState } from "./state.js";
import { tokenize } from "./tokens.js";

export interface RunArgs {
  body: Record<string, unknown>;
  messages: ChatMessage[];
  tools: unknown[] | undefined;
  rendered: ReturnType<typeof renderPrompt>;
  promptTokens: string[];
  stream: boolean;
  returnProgress: boolean;
  reasoningControl: boolean;
  maxTokens: number;
  turn: Turn;
  signal: AbortSignal;
}

export async function runCompletion(
  state: SimState,
  slot: Slot,
  res: ServerResponse,
  entry: RequestLogEntry,
  a: RunArgs,
) {
  const { turn, signal } = a;
  const id = `chatcmpl-${randomId()}`;
  entry.completionId = id;
  const model = typeof a.body.model === "string" && a.body.model ? a.body.model : state.config.modelPath;
  const base: ChunkBase = {
    id,
    created: Math.floor(Date.now() / 1000),
    model,
    systemFingerprint: state.config.buildInfo,
  };
  const sse = a.stream ? new SseWriter(res) : undefined;
  const idTask = state.nextTaskId();

  let reasoningEnded = false;
  state.active.set(id, {
    id,
    reasoningControl: a.reasoningControl,
    endReasoning: () => {
      if (!a.reasoningControl) return false;
      reasoningEnded = true;
      return true;
    },
  });

  const total = a.promptTokens.length;
  const cacheN = a.body.cache_prompt === false ? 0 : slot.cachedPrefix(a.promptTokens);
  const promptN = total - cacheN;
  entry.cacheN = cacheN;

  // What was generated, kept as the client will echo it back.
  let content = "";
  let reasoning = "";
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  let emitted = 0;
  let roleSent = false;
  let processed = cacheN;
  // Tokens decoded but not streamed (quietMs): the real server's parser holding output back.
  let held = 0;
  // While it runs, GET /slots shows this task with live counters, as the real server does.
  const live: SlotTaskInfo = {
    idTask,
    nPromptTokens: total,
    nPromptTokensProcessed: 0,
    nPromptTokensCache: cacheN,
    nDecoded: 0,
    params: taskParams(a.body, a.maxTokens),
  };
  slot.lastTask = live;

  const finishSlot = () => {
    if (processed < total) {
      // Left during prefill: the cache holds what was processed.
      slot.tokens = a.promptTokens.slice(0, processed);
    } else {
      const history = a.rendered.prefill ? a.messages.slice(0, -1) : a.messages;
      const echo = echoedMessage(a.rendered, a.messages, { content, reasoning, calls });
      slot.tokens = tokenize(
        renderPrompt([...history, echo], a.tools, { thinkBlocks: state.config.thinkBlocks, addGenerationPrompt: false })
          .text,
      );
    }
    slot.lastTask = {
      idTask,
      nPromptTokens: total,
      nPromptTokensProcessed: Math.max(0, processed - cacheN),
      nPromptTokensCache: cacheN,
      nDecoded: emitted,
      params: taskParams(a.body, a.maxTokens),
    };
    entry.output = { content, reasoning, toolCalls: calls.map((c) => ({ ...c })) };
    entry.finishedAt = Date.now();
    state.active.delete(id);
  };

  try {
    // Prefill.
    const tPrompt0 = performance.now();
    if (sse && a.rendered.prefill) sse.event(chunk(base, ROLE_DELTA));
    const progress = (p: number, delta: Record<string, unknown>) => {
      const pp: PromptProgress = {
        total,
        cache: cacheN,
        processed: p,
        time_ms: Math.round(performance.now() - tPrompt0),
      };
      sse?.event(chunk(base, delta, null, { prompt_progress: pp }));
    };
    if (sse && a.returnProgress) {
      // With prefill the first progress event carries the continued message (recording cache-2).
      progress(cacheN, a.rendered.prefill ? { content: a.rendered.prefillContent } : ROLE_DELTA);
    } else if (sse && a.rendered.prefill && a.rendered.prefillContent) {
      sse.event(chunk(base, { content: a.rendered.prefillContent }));
    }
    while (processed < total) {
      if (signal.aborted) break;
      await sleep((turn.prefillMsPerBatch ?? 0) + ((turn.prefillMsPer1kDepth ?? 0) * processed) / 1000, signal);
      if (signal.aborted) break;
      processed = Math.min(total, processed + state.config.batchSize);
      live.nPromptTokensProcessed = processed - cacheN;
      if (sse && a.returnProgress) progress(processed, ROLE_DELTA);
    }
    const promptMs = performance.now() - tPrompt0;
    if (signal.aborted) {
      entry.outcome = "aborted";
      return;
    }
    slot.tokens = a.promptTokens.slice();

    // Generation.
    const tGen0 = performance.now();
    const limit = a.maxTokens > 0 ? a.maxTokens : Number.POSITIVE_INFINITY;
    const reasoningPieces = splitPieces(turn.reasoning);
    const contentPieces = splitPieces(turn.content);
    const toolPlans = planToolCalls(turn);
    let silenced = false;
    let quieted = false;
    let finish: string = turn.finishReason ?? (toolPlans.length > 0 ? "tool_calls" : "stop");
    type Stop = "length" | "error" | "drop" | "crash" | "aborted" | undefined;

    const streamError = () => {
      const e = turn.errorInStream!;
      return errorBody(
        e.code ?? 500,
        e.message ?? "The model produced output that does not match the expected peg-native format",
        e.type ?? "server_error",
      );
    };

    // Faults fire once `emitted` reaches their token count; `atEnd` fires the ones the output never reached.
    const faults = async (atEnd: boolean): Promise<Stop> => {
      if (turn.silenceMs && !silenced && (atEnd || emitted >= (turn.silenceAfterTokens ?? 0))) {
        silenced = true;
        await sleep(turn.silenceMs, signal);
      }
      if (turn.quietMs && !quieted && (atEnd || emitted >= (turn.quietAfterTokens ?? 0))) {
        quieted = true;
        // Busy but silent: the slot keeps decoding (n_decoded rises) while nothing is streamed.
        const until = performance.now() + turn.quietMs;
        while (!signal.aborted && performance.now() < until) {
          await sleep(Math.min(20, Math.max(1, until - performance.now())), signal);
          held++;
          live.nDecoded = emitted + held;
        }
      }
      if (signal.aborted) return "aborted";
      if (turn.dropAfterTokens !== undefined && (atEnd || emitted >= turn.dropAfterTokens)) return "drop";
      if (turn.crashAfterTokens !== undefined && (atEnd || emitted >= turn.crashAfterTokens)) return "crash";
      const e = turn.errorInStream;
      if (e && (e.afterTokens === undefined ? atEnd : atEnd || emitted >= e.afterTokens)) return "error";
      return undefined;
    };

    const beforeToken = async (): Promise<Stop> => {
      const f = await faults(false);
      if (f) return f;
      if (emitted >= limit) return "length";
      await sleep(turn.tokenDelayMs ?? 0, signal);
      if (signal.aborted) return "aborted";
      if (sse && !roleSent) sse.event(chunk(base, ROLE_DELTA));
      roleSent = true;
      emitted++;
      live.nDecoded = emitted + held;
      return undefined;
    };

    const generate = async (): Promise<Stop> => {
      for (const piece of reasoningPieces) {
        if (reasoningEnded) break;
        const stop = await beforeToken();
        if (stop) return stop;
        reasoning += piece;
        sse?.event(chunk(base, { reasoning_content: piece }));
      }
      for (const piece of contentPieces) {
        const stop = await beforeToken();
        if (stop) return stop;
        content += piece;
        sse?.event(chunk(base, { content: piece }));
        entry.firstContentHrMs ??= performance.now();
      }
      for (const plan of toolPlans) {
        for (let i = 0; i < plan.pieces.length; i++) {
          const stop = await beforeToken();
          if (stop) return stop;
          const piece = plan.pieces[i]!;
          if (i === 0) {
            calls.push({ id: plan.id, name: plan.name, arguments: piece });
            sse?.event(
              chunk(base, {
                tool_calls: [
                  { index: plan.index, id: plan.id, type: "function", function: { name: plan.name, arguments: piece } },
                ],
              }),
            );
          } else {
            calls[calls.length - 1]!.arguments += piece;
            sse?.event(chunk(base, { tool_calls: [{ index: plan.index, function: { arguments: piece } }] }));
          }
        }
      }
      return faults(true);
    };

    const stop = await generate();
    const predictedMs = performance.now() - tGen0;
    if (stop === "aborted") {
      entry.outcome = "aborted";
      return;
    }
    if (stop === "drop") {
      // A scripted crash of the connection, not a polite end of stream.
      entry.outcome = "dropped";
      res.destroy();
      return;
    }
    if (stop === "crash") {
      // The whole process: this stream and every other connection go with it.
      entry.outcome = "dropped";
      res.destroy();
      state.crash({ downMs: turn.crashDownMs ?? 0, loadingMs: turn.crashLoadingMs ?? 0 });
      return;
    }
    if (stop === "error") {
      entry.outcome = "error_in_stream";
      const err = streamError();
      if (sse) {
        entry.status = 200;
        sse.event(err);
        sse.end();
      } else {
        entry.status = err.error.code;
        sendJson(res, err.error.code, err);
      }
      return;
    }
    if (stop === "length") finish = "length";
    // The end-of-generation token counts as predicted unless the limit cut generation short.
    const predictedN = emitted + (finish === "length" ? 0 : 1);
    const timings = makeTimings(cacheN, promptN, promptMs, predictedN, predictedMs);
    entry.timings = timings;
    entry.finishReason = finish;
    entry.outcome = "completed";
    entry.status = 200;
    if (sse) {
      if (!roleSent) sse.event(chunk(base, ROLE_DELTA));
      sse.event(chunk(base, {}, finish, { timings }));
      sse.done();
      return;
    }
    sendJson(
      res,
      200,
      completionBody(base, a.rendered, { content, reasoning, calls }, finish, total, predictedN, cacheN, timings),
    );
  } finally {
    finishSlot();
  }
}
