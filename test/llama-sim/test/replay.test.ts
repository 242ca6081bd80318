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

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sseEvents, startClient, type Reply, type SimClient } from "./helpers.js";
import {
  recordings,
  isSse,
  parse,
  asObj,
  turnFromSse,
  turnFromJson,
  recordedModel,
  isChat,
  hasModelOutput,
  controlFor,
  kindOf,
  type Recording,
  type Json,
} from "./recordings.js";
import { compareJson, compareSse, expectHttp } from "./shape-compare.js";

async function prime(c: SimClient, slot: number): Promise<void> {
  c.sim.enqueue({ content: "primed" }, slot);
  const r = await c.send("POST", "/v1/chat/completions", {
    messages: [{ role: "user", content: `prime slot ${slot}` }],
    id_slot: slot,
  });
  expect(r.status).toBe(200);
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
