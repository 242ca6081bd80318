// The recorded llama-server exchanges (test/fixtures/llama-server) and the simulator script each one implies.

import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Turn } from "@boxmaker/llama-sim";
import { sseEvents } from "./helpers.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const recDir = path.resolve(repoRoot, "test/fixtures/llama-server");

export interface Recording {
  file: string;
  name: string;
  note: string;
  request: { method: string; path: string; body: unknown };
  response: { status: number; content_type: string; body: string };
}

export const recordings: Recording[] = readdirSync(recDir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((file) => ({ file, ...(JSON.parse(readFileSync(path.join(recDir, file), "utf8")) as Omit<Recording, "file">) }));

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Obj = Record<string, Json>;

export const isSse = (r: Recording) => r.response.content_type.startsWith("text/event-stream");
export const parse = (s: string) => JSON.parse(s) as Json;
export const asObj = (v: unknown) => (v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : {});
export function turnFromSse(events: string[]): Turn {
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

export function turnFromJson(status: number, body: Json): Turn {
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

export function recordedModel(r: Recording): { modelPath?: string; buildInfo?: string } {
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

export const isChat = (r: Recording) => r.request.method === "POST" && r.request.path === "/v1/chat/completions";
/** A chat recording whose answer came from the model (not a request the server refused). */
export const hasModelOutput = (r: Recording) =>
  isChat(r) &&
  typeof r.request.body === "object" &&
  (r.response.status === 200 || asObj(asObj(parse(r.response.body)).error).type === "server_error");

export function controlFor(stream: Recording): Recording | undefined {
  const id = asObj(parse(sseEvents(stream.response.body)[0]!)).id;
  return recordings.find((r) => r.request.path === "/v1/chat/completions/control" && asObj(r.request.body).id === id);
}

// ---------- replay ----------

export type Kind =
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

export function kindOf(payload: string): Kind {
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
