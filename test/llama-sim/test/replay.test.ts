// Replays every recorded llama-server exchange against the simulator.
//
// For each recording: the simulator is scripted with the model output the
// recording shows (content, reasoning and tool-call deltas, finish reason, or
// the error), the recorded request is sent unchanged over the Unix socket,
// and the answers are compared:
//  - the same HTTP status and the same Content-Type;
//  - JSON bodies: the same field names in the same order and the same JSON
//    types at every level (arrays element by element); protocol values
//    (object, type, code, finish_reason, role, status, success) are equal;
//    error messages are equal once numbers are masked, except the JSON parser
//    message, whose nlohmann prefix is compared;
//  - SSE bodies: the same sequence of chunk kinds (progress, role, reasoning,
//    content, tool_call first, tool_call append, final, error, DONE), each
//    chunk with the same field names and JSON types as the recorded chunk in
//    the same position of its run. Run lengths are equal, except: the number
//    of progress events depends on the prompt's token count (one per
//    2,048-token batch), so it is checked against the simulator's own counts;
//    and where a reasoning_end control call cuts the reasoning, the number of
//    reasoning deltas depends on timing (the real server sent 2 after the
//    call; the simulator may send up to 3).
//  - the streamed text (content, reasoning, tool arguments) equals the
//    recording's, and a final chunk's finish_reason and an error object equal
//    the recorded ones.
// Ids, timestamps, timing numbers, token counts and the model's gibberish
// values are not compared, except where the simulator is configured from the
// recording (props: chat_template, total_slots, n_ctx, build_info, model_path).

import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Turn } from "@boxmaker/llama-sim";
import { sseEvents, startClient, type Reply, type SimClient } from "./helpers.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const recDir = path.resolve(repoRoot, "test/fixtures/llama-server");

interface Recording {
  file: string;
  name: string;
  note: string;
  request: { method: string; path: string; body: unknown };
  response: { status: number; content_type: string; body: string };
}

const recordings: Recording[] = readdirSync(recDir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((file) => ({ file, ...(JSON.parse(readFileSync(path.join(recDir, file), "utf8")) as Omit<Recording, "file">) }));

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = Record<string, Json>;

const isSse = (r: Recording) => r.response.content_type.startsWith("text/event-stream");
const parse = (s: string) => JSON.parse(s) as Json;
const asObj = (v: unknown) => (v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : {});

// ---------- shape comparison ----------

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

const EXACT_KEYS = new Set(["object", "type", "code", "finish_reason", "role", "status", "success"]);

function diffShape(ours: unknown, rec: unknown, at: string, out: string[]): void {
  const to = typeName(ours);
  const tr = typeName(rec);
  if (to !== tr) {
    out.push(`${at}: ${to} vs recorded ${tr}`);
    return;
  }
  if (to === "array") {
    const o = ours as unknown[];
    const r = rec as unknown[];
    if (r.length === 0) {
      if (o.length > 0) out.push(`${at}: non-empty array vs recorded empty`);
      return;
    }
    for (const [i, v] of o.entries()) diffShape(v, r[Math.min(i, r.length - 1)], `${at}[${i}]`, out);
    return;
  }
  if (to === "object") {
    const o = ours as Obj;
    const r = rec as Obj;
    const ko = Object.keys(o).join(",");
    const kr = Object.keys(r).join(",");
    if (ko !== kr) out.push(`${at}: keys {${ko}} vs recorded {${kr}}`);
    for (const k of Object.keys(o)) {
      if (!(k in r)) continue;
      const key = k;
      if (EXACT_KEYS.has(key) && typeof r[k] !== "object" && o[k] !== r[k]) {
        out.push(`${at}.${k}: ${JSON.stringify(o[k])} vs recorded ${JSON.stringify(r[k])}`);
      }
      diffShape(o[k], r[k], `${at}.${k}`, out);
    }
  }
}

function expectSameShape(ours: unknown, rec: unknown, what: string): void {
  const out: string[] = [];
  diffShape(ours, rec, "$", out);
  expect(out, `${what}:\n${out.join("\n")}`).toEqual([]);
}

function compareErrorMessage(ours: Json, rec: Json): void {
  const o = asObj(asObj(ours).error);
  const r = asObj(asObj(rec).error);
  if (typeof r.message !== "string") return;
  if (r.message.startsWith("[json.exception")) {
    expect(String(o.message)).toMatch(/^\[json\.exception\.parse_error\.101\] parse error at line \d+, column \d+: /);
    return;
  }
  const mask = (s: unknown) => String(s).replace(/\d+/g, "N");
  expect(mask(o.message)).toBe(mask(r.message));
}

// ---------- SSE kinds ----------

type Kind =
  | "progress"
  | "progress+prefill"
  | "role"
  | "reasoning"
  | "content"
  | "tool_call_first"
  | "tool_call_append"
  | "final"
  | "error"
  | "DONE";

function kindOf(payload: string): Kind {
  if (payload === "[DONE]") return "DONE";
  const o = JSON.parse(payload) as Obj;
  if ("error" in o) return "error";
  const choice = asObj((o.choices as Json[] | undefined)?.[0]);
  const delta = asObj(choice.delta);
  if (choice.finish_reason !== null && choice.finish_reason !== undefined) return "final";
  if ("prompt_progress" in o) return typeof delta.content === "string" ? "progress+prefill" : "progress";
  if ("role" in delta) return "role";
  if ("reasoning_content" in delta) return "reasoning";
  if ("content" in delta) return "content";
  const tc = asObj((delta.tool_calls as Json[] | undefined)?.[0]);
  if ("tool_calls" in delta) return "id" in tc ? "tool_call_first" : "tool_call_append";
  throw new Error(`unknown chunk kind: ${payload.slice(0, 200)}`);
}

interface Run {
  kind: Kind;
  events: string[];
}

function runs(events: string[]): Run[] {
  const out: Run[] = [];
  for (const e of events) {
    const k = kindOf(e);
    const last = out[out.length - 1];
    if (last && last.kind === k) last.events.push(e);
    else out.push({ kind: k, events: [e] });
  }
  return out;
}

interface StreamText {
  content: string;
  reasoning: string;
  args: string[];
}

function streamedText(events: string[]): StreamText {
  const t: StreamText = { content: "", reasoning: "", args: [] };
  for (const e of events) {
    const k = kindOf(e);
    if (k === "DONE" || k === "error" || k.startsWith("progress")) continue;
    const delta = asObj(asObj((asObj(parse(e)).choices as Json[])[0]).delta);
    if (typeof delta.content === "string") t.content += delta.content;
    if (typeof delta.reasoning_content === "string") t.reasoning += delta.reasoning_content;
    for (const tc of (delta.tool_calls as Json[] | undefined) ?? []) {
      const c = asObj(tc);
      const i = c.index as number;
      t.args[i] = (t.args[i] ?? "") + String(asObj(c.function).arguments ?? "");
    }
  }
  return t;
}

/** Progress events the batch rule predicts: one at the cache, one per batch, the last at the total. */
function checkProgress(events: string[], batch = 2048): void {
  const pp = events
    .filter((e) => e !== "[DONE]" && "prompt_progress" in asObj(parse(e)))
    .map((e) => asObj(asObj(parse(e)).prompt_progress));
  if (pp.length === 0) return;
  const first = pp[0]!;
  const last = pp[pp.length - 1]!;
  expect(first.processed).toBe(first.cache);
  expect(last.processed).toBe(last.total);
  const total = first.total as number;
  const cache = first.cache as number;
  expect(pp.length).toBe(1 + Math.ceil((total - cache) / batch));
  for (let i = 1; i < pp.length; i++) {
    expect(pp[i]!.processed as number).toBeGreaterThan(pp[i - 1]!.processed as number);
    expect(pp[i]!.time_ms as number).toBeGreaterThanOrEqual(pp[i - 1]!.time_ms as number);
  }
}

// ---------- scripting from a recording ----------

function turnFromSse(events: string[]): Turn {
  const reasoning: string[] = [];
  const content: string[] = [];
  const calls: Array<{ id: string; name: string; arguments: string[] }> = [];
  let finishReason: Turn["finishReason"];
  let tokens = 0;
  const turn: Turn = {};
  for (const e of events) {
    const k = kindOf(e);
    if (k === "DONE" || k === "role" || k.startsWith("progress")) continue;
    const o = asObj(parse(e));
    if (k === "error") {
      const err = asObj(o.error);
      turn.errorInStream = {
        code: err.code as number,
        message: err.message as string,
        type: err.type as string,
        // An error before any delta came right after prefill; otherwise where the output ended.
        ...(tokens === 0 ? { afterTokens: 0 } : {}),
      };
      continue;
    }
    const choice = asObj((o.choices as Json[])[0]);
    const delta = asObj(choice.delta);
    if (k === "final") {
      finishReason = choice.finish_reason as Turn["finishReason"];
      continue;
    }
    tokens++;
    if (k === "reasoning") reasoning.push(delta.reasoning_content as string);
    if (k === "content") content.push(delta.content as string);
    const tc = asObj((delta.tool_calls as Json[] | undefined)?.[0]);
    const fn = asObj(tc.function);
    if (k === "tool_call_first")
      calls.push({ id: tc.id as string, name: fn.name as string, arguments: [fn.arguments as string] });
    if (k === "tool_call_append") calls[tc.index as number]!.arguments.push(fn.arguments as string);
  }
  if (reasoning.length) turn.reasoning = reasoning;
  if (content.length) turn.content = content;
  if (calls.length) turn.toolCalls = calls;
  if (finishReason) turn.finishReason = finishReason;
  return turn;
}

function turnFromJson(status: number, body: Json): Turn {
  const o = asObj(body);
  if (status !== 200) {
    const err = asObj(o.error);
    return { errorInStream: { code: err.code as number, message: err.message as string, type: err.type as string } };
  }
  const choice = asObj((o.choices as Json[])[0]);
  const msg = asObj(choice.message);
  const turn: Turn = { content: (msg.content as string | null) ?? "" };
  if (typeof msg.reasoning_content === "string") turn.reasoning = msg.reasoning_content;
  const calls = (msg.tool_calls as Json[] | undefined) ?? [];
  if (calls.length) {
    // One delta per call keeps the arguments byte for byte.
    turn.toolCalls = calls.map((c) => {
      const co = asObj(c);
      const fn = asObj(co.function);
      return { id: co.id as string, name: fn.name as string, arguments: [fn.arguments as string] };
    });
  }
  turn.finishReason = choice.finish_reason as Turn["finishReason"];
  return turn;
}

function recordedModel(r: Recording): { modelPath?: string; buildInfo?: string } {
  if (!r.response.content_type.includes("json") && !isSse(r)) return {};
  const first = isSse(r) ? sseEvents(r.response.body)[0] : r.response.body;
  try {
    const o = asObj(parse(first ?? ""));
    return {
      ...(typeof o.model === "string" ? { modelPath: o.model } : {}),
      ...(typeof o.system_fingerprint === "string" ? { buildInfo: o.system_fingerprint } : {}),
    };
  } catch {
    return {};
  }
}

const isChat = (r: Recording) => r.request.method === "POST" && r.request.path === "/v1/chat/completions";
/** A chat recording whose answer came from the model (not a request the server refused). */
const hasModelOutput = (r: Recording) =>
  isChat(r) &&
  typeof r.request.body === "object" &&
  (r.response.status === 200 || asObj(asObj(parse(r.response.body)).error).type === "server_error");

function controlFor(stream: Recording): Recording | undefined {
  const id = asObj(parse(sseEvents(stream.response.body)[0]!)).id;
  return recordings.find((r) => r.request.path === "/v1/chat/completions/control" && asObj(r.request.body).id === id);
}

// ---------- replay ----------

async function prime(c: SimClient, slot: number): Promise<void> {
  c.sim.enqueue({ content: "primed" }, slot);
  const r = await c.send("POST", "/v1/chat/completions", {
    messages: [{ role: "user", content: `prime slot ${slot}` }],
    id_slot: slot,
  });
  expect(r.status).toBe(200);
}

function compareJson(ours: Reply, r: Recording): void {
  const o = parse(ours.text);
  const rec = parse(r.response.body);
  expectSameShape(o, rec, r.name);
  if (r.response.status >= 400) compareErrorMessage(o, rec);
}

function compareSse(ours: Reply & { events: string[] }, r: Recording, opts: { reasoningCutAt?: number } = {}): void {
  const recEvents = sseEvents(r.response.body);
  const ro = runs(ours.events);
  const rr = runs(recEvents);
  expect(
    ro.map((x) => x.kind),
    `${r.name}: chunk kinds`,
  ).toEqual(rr.map((x) => x.kind));
  checkProgress(ours.events);
  checkProgress(recEvents);
  ro.forEach((run, i) => {
    const rec = rr[i]!;
    if (run.kind === "progress") {
      // Counted by checkProgress against the simulator's own token counts.
    } else if (run.kind === "reasoning" && opts.reasoningCutAt !== undefined) {
      expect(run.events.length).toBeGreaterThanOrEqual(opts.reasoningCutAt);
      expect(run.events.length).toBeLessThanOrEqual(opts.reasoningCutAt + 3);
    } else {
      expect(run.events.length, `${r.name}: ${run.kind} run ${i}`).toBe(rec.events.length);
    }
    for (const [j, e] of run.events.entries()) {
      const recEvent = rec.events[Math.min(j, rec.events.length - 1)]!;
      if (run.kind === "DONE") {
        expect(e).toBe("[DONE]");
        continue;
      }
      expectSameShape(parse(e), parse(recEvent), `${r.name} ${run.kind} #${j}`);
      if (run.kind === "error") expect(parse(e)).toEqual(parse(recEvent));
    }
  });
  const to = streamedText(ours.events);
  const tr = streamedText(recEvents);
  expect(to.content).toBe(tr.content);
  expect(to.args).toEqual(tr.args);
  if (opts.reasoningCutAt === undefined) expect(to.reasoning).toBe(tr.reasoning);
  else expect(tr.reasoning.startsWith(to.reasoning) || to.reasoning.startsWith(tr.reasoning)).toBe(true);
  // The simulator's own accounting: the final timings agree with its progress events.
  const final = ours.events.map((e) => (e === "[DONE]" ? {} : asObj(parse(e)))).find((o) => "timings" in o);
  const progress = ours.events
    .map((e) => (e === "[DONE]" ? {} : asObj(parse(e))))
    .filter((o) => "prompt_progress" in o);
  if (final && progress.length) {
    const t = asObj(final.timings);
    const p = asObj(progress[0]!.prompt_progress);
    expect((t.cache_n as number) + (t.prompt_n as number)).toBe(p.total);
    expect(t.cache_n).toBe(p.cache);
  }
}

async function replayOne(c: SimClient, r: Recording): Promise<Reply & { events: string[] }> {
  if (hasModelOutput(r)) {
    c.sim.enqueue(
      isSse(r) ? turnFromSse(sseEvents(r.response.body)) : turnFromJson(r.response.status, parse(r.response.body)),
    );
  }
  if (isSse(r)) return c.stream(r.request.body);
  const ours = await c.send(r.request.method, r.request.path, r.request.body);
  return { ...ours, events: [] };
}

function expectHttp(ours: Reply, r: Recording): void {
  expect(ours.status, `${r.name}: status`).toBe(r.response.status);
  expect(ours.contentType, `${r.name}: content type`).toBe(r.response.content_type);
}

const baseOptions = { totalSlots: 3, nCtx: 32768 };

const cacheSeries = recordings.filter((r) => r.name.startsWith("cache-"));
const pairedControls = new Set(
  recordings
    .filter((r) => isSse(r) && isChat(r))
    .map((r) => controlFor(r)?.file)
    .filter((f): f is string => !!f),
);
const single = recordings.filter((r) => !cacheSeries.includes(r) && !pairedControls.has(r.file));

describe("replay of recorded llama-server exchanges", () => {
  it("found the recordings", () => {
    expect(recordings.length).toBeGreaterThanOrEqual(29);
  });

  for (const r of single) {
    it(`${r.name}: ${r.note.slice(0, 80)}`, async () => {
      const body = r.response.content_type.includes("json") ? asObj(parse(r.response.body)) : {};
      const err = asObj(body.error);
      const props = r.request.path === "/props" ? body : undefined;
      // Slot endpoints need save support and slots that have served a task.
      if (r.request.path.startsWith("/slots")) return replaySlots(r);
      const c = await startClient({
        ...baseOptions,
        ...recordedModel(r),
        // The overflow recordings came from a server started with a small context.
        ...(err.type === "exceed_context_size_error" ? { nCtx: err.n_ctx as number } : {}),
        ...(err.message === "Loading model" ? { loading: true } : {}),
        ...(props
          ? {
              chatTemplate: props.chat_template as string,
              totalSlots: props.total_slots as number,
              nCtx: asObj(props.default_generation_settings).n_ctx as number,
              buildInfo: props.build_info as string,
              modelPath: props.model_path as string,
            }
          : {}),
      });
      try {
        const control = isSse(r) && isChat(r) ? controlFor(r) : undefined;
        if (control) return await replayWithControl(c, r, control);
        const ours = await replayOne(c, r);
        expectHttp(ours, r);
        if (isSse(r)) compareSse(ours, r);
        else if (r.response.content_type.includes("json")) compareJson(ours, r);
        if (props) {
          const o = asObj(parse(ours.text));
          for (const k of ["chat_template", "total_slots", "build_info", "model_path"]) expect(o[k]).toEqual(props[k]);
          expect(asObj(o.default_generation_settings).n_ctx).toBe(asObj(props.default_generation_settings).n_ctx);
        }
      } finally {
        await c.close();
      }
    });
  }

  async function replaySlots(r: Recording): Promise<void> {
    const c2 = await startClient({ ...baseOptions, slotSavePath: mkdtempSync(path.join(tmpdir(), "llama-sim-save-")) });
    try {
      const m = /^\/slots\/(\d+)\?action=(\w+)/.exec(r.request.path);
      if (r.request.method === "GET") {
        // Prime the slots the recording shows as having served a task.
        const rec = parse(r.response.body) as Json[];
        for (const s of rec) if ("id_task" in asObj(s)) await prime(c2, asObj(s).id as number);
      } else if (m && r.response.status === 200) {
        const slot = Number(m[1]);
        await prime(c2, slot);
        if (m[2] === "restore") {
          const saved = await c2.send("POST", `/slots/${slot}?action=save`, r.request.body);
          expect(saved.status).toBe(200);
          await c2.send("POST", `/slots/${slot}?action=erase`);
        }
      }
      const ours = await c2.send(r.request.method, r.request.path, r.request.body);
      expectHttp(ours, r);
      compareJson(ours, r);
    } finally {
      await c2.close();
    }
  }

  async function replayWithControl(c: SimClient, r: Recording, control: Recording): Promise<void> {
    const recEvents = sseEvents(r.response.body);
    const turn = turnFromSse(recEvents);
    // The recording's note says how many reasoning deltas came before the call.
    const cutAt = Number(/after (\d+) (?:reasoning deltas|of them)/.exec(r.note)?.[1]);
    expect(cutAt).toBeGreaterThan(0);
    // More reasoning than was recorded: only the control call can end it.
    const recorded = Array.isArray(turn.reasoning) ? turn.reasoning : [];
    c.sim.enqueue({
      ...turn,
      reasoning: [...recorded, ...Array.from({ length: 400 }, () => " more")],
      tokenDelayMs: 25,
    });
    let seen = 0;
    let controlReply: Reply | undefined;
    const ours = await c.stream(r.request.body, async (payload) => {
      if (payload === "[DONE]" || kindOf(payload) !== "reasoning") return;
      seen++;
      if (seen === cutAt) {
        const id = asObj(parse(payload)).id as string;
        controlReply = await c.send("POST", control.request.path, { ...asObj(control.request.body), id });
      }
    });
    expectHttp(ours, r);
    compareSse(ours, r, { reasoningCutAt: cutAt });
    expect(controlReply).toBeDefined();
    expectHttp(controlReply!, control);
    expect(parse(controlReply!.text)).toEqual(parse(control.response.body));
    expect(c.sim.controlCalls.at(-1)?.action).toBe("reasoning_end");
  }

  describe("the cache series on one slot", () => {
    let c: SimClient;
    const cacheN: Record<string, number> = {};
    beforeAll(async () => {
      c = await startClient({ ...baseOptions, ...recordedModel(cacheSeries[0]!) });
    });
    afterAll(async () => {
      await c.close();
    });
    for (const r of cacheSeries) {
      it(`${r.name}: ${r.note.slice(0, 80)}`, async () => {
        const ours = await replayOne(c, r);
        expectHttp(ours, r);
        compareSse(ours, r);
        const final = asObj(parse(ours.events[ours.events.length - 2]!));
        cacheN[r.name] = asObj(final.timings).cache_n as number;
      });
    }
    it("reuses and loses the cache where the recordings do", () => {
      const [c1, c2, c3, c4, c5] = cacheSeries.map((r) => cacheN[r.name]!);
      expect(c1).toBe(0);
      // Echo of the assistant message: at least the whole first prompt is reused.
      expect(c2).toBeGreaterThan(0);
      // An altered earlier message and a changed tools array both cost more than the untouched history.
      expect(c4).toBeLessThan(c3!);
      expect(c5).toBeLessThan(c4!);
    });
  });
});
