// Routes. Plain node:http: the point is to control every byte and every
// status the way llama-server sends them.

import http, { type IncomingMessage, type ServerResponse } from "node:http";
import { handleChatCompletion } from "./completion.js";
import { handleControl } from "./control.js";
import { modelsBody, propsBody } from "./props.js";
import { validateTurn, type Turn } from "./script.js";
import { handleSlotAction } from "./slot-actions.js";
import { errorBody, sendJson } from "./sse.js";
import type { SimState } from "./state.js";
import { pieceId, tokenize } from "./tokens.js";
import { renderPrompt, type ChatMessage } from "./render.js";
import { jsonParseError } from "./completion.js";

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (b: Buffer) => parts.push(b));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

function slotsBody(state: SimState): unknown[] {
  return state.slots.map((s) => {
    const base = { id: s.id, n_ctx: s.nCtx, speculative: false, is_processing: s.processing };
    const t = s.lastTask;
    // A slot that never ran a task reports only these four fields (slots-idle).
    if (!t) return base;
    return {
      ...base,
      id_task: t.idTask,
      n_prompt_tokens: t.nPromptTokens,
      n_prompt_tokens_processed: t.nPromptTokensProcessed,
      n_prompt_tokens_cache: t.nPromptTokensCache,
      params: t.params,
      next_token: [{ has_next_token: s.processing, has_new_line: false, n_remain: -1, n_decoded: t.nDecoded }],
    };
  });
}

const NOT_FOUND = errorBody(404, "File Not Found", "not_found_error");

export function createSimServer(state: SimState): http.Server {
  const server = http.createServer((req, res) => {
    handle(state, req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, errorBody(500, String(err), "server_error"));
      else res.destroy();
    });
  });
  // Streams can stay silent for a long time by design (faults); never time them out here.
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  server.keepAliveTimeout = 5000;
  return server;
}

async function handle(state: SimState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://llama-sim");
  const method = req.method ?? "GET";
  const raw = await readBody(req);
  const p = url.pathname;

  if (p.startsWith("/__sim/")) return handleAdmin(state, method, p, raw, res);

  let parsed: unknown;
  try {
    parsed = raw ? JSON.parse(raw) : undefined;
  } catch {
    parsed = undefined;
  }
  const entry = state.logRequest({ method, path: p + url.search, rawBody: raw, body: parsed });
  const reply = (status: number, body: unknown) => {
    entry.status = status;
    entry.finishedAt = Date.now();
    sendJson(res, status, body);
  };

  // While the model loads, llama-server answers every endpoint with this 503 (health-loading).
  // Its fields come in this order, unlike other errors'.
  if (state.loading) return reply(503, { error: { message: "Loading model", type: "unavailable_error", code: 503 } });

  if (method === "GET" && (p === "/health" || p === "/v1/health")) return reply(200, { status: "ok" });
  if (method === "GET" && (p === "/props" || p === "/v1/props")) {
    const c = state.config;
    return reply(
      200,
      propsBody({
        chatTemplate: c.chatTemplate,
        totalSlots: c.totalSlots,
        nCtx: c.nCtx,
        buildInfo: c.buildInfo,
        modelPath: c.modelPath,
        sleeping: false,
      }),
    );
  }
  if (method === "GET" && (p === "/v1/models" || p === "/models")) {
    return reply(200, modelsBody(state.config.modelPath, state.config.nCtx, state.startedAt));
  }
  if (method === "GET" && p === "/slots") {
    const fail = url.searchParams.get("fail_on_no_slot");
    if (fail && fail !== "0" && !state.slots.some((s) => !s.processing)) {
      return reply(503, errorBody(503, "no slot available", "unavailable_error"));
    }
    return reply(200, slotsBody(state));
  }
  if (method === "POST" && p === "/tokenize") {
    if (raw && parsed === undefined) {
      let msg = "";
      try {
        JSON.parse(raw);
      } catch (err) {
        msg = jsonParseError(raw, err);
      }
      return reply(500, errorBody(500, msg, "server_error"));
    }
    const b = (parsed ?? {}) as Record<string, unknown>;
    const pieces = typeof b.content === "string" ? tokenize(b.content) : [];
    const tokens =
      b.with_pieces === true ? pieces.map((piece) => ({ id: pieceId(piece), piece })) : pieces.map(pieceId);
    return reply(200, { tokens });
  }
  // The prompt a completion with this body would read, as llama-server renders it (the same
  // path as /v1/chat/completions, without inference): `{"prompt": "…"}`. The template probe uses it.
  if (method === "POST" && p === "/apply-template") {
    if (parsed === undefined || typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      let msg = "body is not a JSON object";
      try {
        JSON.parse(raw);
      } catch (err) {
        msg = jsonParseError(raw, err);
      }
      return reply(500, errorBody(500, msg, "server_error"));
    }
    const b = parsed as Record<string, unknown>;
    if (!Array.isArray(b.messages) || b.messages.length === 0) {
      return reply(
        400,
        errorBody(400, "'messages' is required and must be a non-empty array", "invalid_request_error"),
      );
    }
    const tools = Array.isArray(b.tools) ? (b.tools as unknown[]) : undefined;
    const rendered = renderPrompt(b.messages as ChatMessage[], tools, { thinkBlocks: state.config.thinkBlocks });
    return reply(200, { prompt: rendered.text });
  }
  if (method === "POST" && (p === "/v1/chat/completions/control" || p === "/chat/completions/control")) {
    entry.status = handleControl(state, res, raw);
    entry.finishedAt = Date.now();
    return;
  }
  if (method === "POST" && (p === "/v1/chat/completions" || p === "/chat/completions")) {
    return handleChatCompletion(state, res, raw, entry);
  }
  const slotAction = /^\/slots\/([^/]+)$/.exec(p);
  if (method === "POST" && slotAction) {
    entry.status = await handleSlotAction(state, res, slotAction[1]!, url.searchParams.get("action"), raw);
    entry.finishedAt = Date.now();
    return;
  }
  return reply(404, NOT_FOUND);
}

/** Turns from an admin body: a turn, an array of turns, or {turns|turn, slot}. */
export function parseScriptBody(body: unknown): { turns: Turn[]; slot: number | undefined } {
  if (Array.isArray(body)) return { turns: body.map(validateTurn), slot: undefined };
  if (body && typeof body === "object") {
    const b = body as Record<string, unknown>;
    if ("turns" in b || "turn" in b) {
      const slot = typeof b.slot === "number" ? b.slot : undefined;
      const list = "turns" in b ? b.turns : [b.turn];
      if (!Array.isArray(list)) throw new Error("turns must be an array");
      return { turns: list.map(validateTurn), slot };
    }
  }
  return { turns: [validateTurn(body)], slot: undefined };
}

function handleAdmin(state: SimState, method: string, p: string, raw: string, res: ServerResponse): void {
  const [status, reply] = adminReply(state, method, p, raw);
  sendJson(res, status, reply);
}

/** The test-control routes under /__sim: status and JSON body for one request. */
function adminReply(state: SimState, method: string, p: string, raw: string): [number, unknown] {
  let body: unknown;
  try {
    body = raw ? JSON.parse(raw) : undefined;
  } catch (err) {
    return [400, { error: `bad JSON: ${String(err)}` }];
  }
  if (method === "POST" && p === "/__sim/script") {
    try {
      const { turns, slot } = parseScriptBody(body);
      for (const t of turns) state.script.enqueue(t, slot);
      return [200, { queued: turns.length, pending: state.script.pending }];
    } catch (err) {
      return [400, { error: err instanceof Error ? err.message : String(err) }];
    }
  }
  if (method === "GET" && p === "/__sim/requests") {
    // The entries' performance.now() stamps plus monotonicOffsetMs are CLOCK_MONOTONIC ms, the clock of
    // process.hrtime in every process on the machine. (performance.timeOrigin is not: it differs between
    // processes by tenths of a millisecond, which is what a stage of a request is.)
    const monotonicOffsetMs = Number(process.hrtime.bigint()) / 1e6 - performance.now();
    return [200, { requests: state.requests, controlCalls: state.controlCalls, monotonicOffsetMs }];
  }
  if (method === "POST" && p === "/__sim/reset") {
    state.reset();
    return [200, { ok: true }];
  }
  if (method === "POST" && p === "/__sim/loading") {
    const b = (body ?? {}) as Record<string, unknown>;
    if (typeof b.loading !== "boolean") return [400, { error: 'body must be {"loading": boolean}' }];
    state.loading = b.loading;
    return [200, { loading: state.loading }];
  }
  if (method === "GET" && p === "/__sim/state") {
    return [
      200,
      {
        loading: state.loading,
        pendingTurns: state.script.pending,
        maxConcurrentPerSlot: state.maxConcurrentPerSlot(),
        slots: state.slots.map((s) => ({
          id: s.id,
          nTokens: s.tokens.length,
          isProcessing: s.processing,
          inFlight: s.inFlight,
        })),
      },
    ];
  }
  return [404, { error: "unknown admin route" }];
}
