// How a simulator answer is compared with a recorded one (see replay.test.ts for the rules).

import { expect } from "vitest";
import { sseEvents, type Reply } from "./helpers.js";
import { parse, asObj, type Recording, type Json, type Obj, kindOf, type Kind } from "./recordings.js";

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

export function compareJson(ours: Reply, r: Recording): void {
  const o = parse(ours.text);
  const rec = parse(r.response.body);
  expectSameShape(o, rec, r.name);
  if (r.response.status >= 400) compareErrorMessage(o, rec);
}

export function compareSse(
  ours: Reply & { events: string[] },
  r: Recording,
  opts: { reasoningCutAt?: number } = {},
): void {
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

export function expectHttp(ours: Reply, r: Recording): void {
  expect(ours.status, `${r.name}: status`).toBe(r.response.status);
  expect(ours.contentType, `${r.name}: content type`).toBe(r.response.content_type);
}
