import { CompleteRequestSchema, invalidArgument, type CompleteRequest } from "@boxmaker/common";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { SamplingConfig } from "../config.js";
import { JsonArrayCheck } from "./json-array-check.js";

/**
 * The parts of a CompleteRequest that shape the body, named and typed as the
 * proto has them: the service hands the request over whole, so a new request
 * field reaches the body by being picked here and used below.
 */
export interface CompletionInput
  extends Pick<CompleteRequest, "slot" | "messagesJson" | "toolsJson" | "maxTokens" | "thinkingCapTokens"> {
  /** Set when the messages were checked already (spliced onto a remembered, checked prefix). */
  messagesChecked?: boolean;
  /** Overrides of the configured sampling (the proto's Sampling, read as plain numbers). */
  sampling?: Partial<Record<keyof SamplingConfig, number | undefined>>;
}

/**
 * A CompletionInput from only the request fields a caller sets, every other
 * one at the proto's default: what a test or bench builds, so a new request
 * field needs no edit there.
 */
export function completionInput(
  init: MessageInitShape<typeof CompleteRequestSchema>,
  extra: Pick<CompletionInput, "messagesChecked" | "sampling"> = {},
): CompletionInput {
  return { ...create(CompleteRequestSchema, init), ...extra };
}

export interface ShapingDefaults {
  sampling: SamplingConfig;
  maxTokens: number;
  totalSlots: number;
}

/**
 * The body of `POST /v1/chat/completions` around its messages array: the
 * body is `head`, the array, then `tail`. messages_json and tools_json are
 * spliced in byte for byte: the server's prompt cache only hits when every
 * earlier byte of the rendered prompt is unchanged, and a parse/re-serialise
 * round trip can change number formatting, escapes and key order. They are
 * checked only to reject what is not a JSON array, and a conversation that
 * grew since the last request is checked only in its new messages
 * (`JsonArrayCheck`).
 */
export function completionBodyParts(
  input: CompletionInput,
  d: ShapingDefaults,
  check = new JsonArrayCheck(),
): { head: string; tail: string } {
  if (!Number.isInteger(input.slot) || input.slot < 0 || input.slot >= d.totalSlots) {
    // The server would silently wrap id_slot around and let two sessions share a slot.
    throw invalidArgument(`slot ${input.slot} does not exist: llama-server has slots 0..${d.totalSlots - 1}`, {
      field: "slot",
    });
  }
  if (!input.messagesChecked) check.require(input.messagesJson, "messages_json", false);
  const hasTools = input.toolsJson.trim() !== "";
  if (hasTools) check.require(input.toolsJson, "tools_json", true);

  const s = input.sampling ?? {};
  const pick = (k: keyof SamplingConfig): number => {
    const v = s[k];
    if (v === undefined || v === null) return d.sampling[k];
    if (!Number.isFinite(v) || v < 0)
      throw invalidArgument(`sampling.${k} must be a finite number >= 0, got ${v}`, { field: `sampling.${k}` });
    return v;
  };
  const maxTokens = input.maxTokens > 0 ? input.maxTokens : d.maxTokens;

  let head =
    `{"id_slot":${input.slot},"cache_prompt":true,"stream":true,"return_progress":true` +
    `,"max_tokens":${maxTokens},"temperature":${num(pick("temperature"))},"top_p":${num(pick("top_p"))}` +
    `,"top_k":${num(pick("top_k"))},"min_p":${num(pick("min_p"))}`;
  if (input.thinkingCapTokens > 0) head += `,"reasoning_control":true`;
  return { head: `${head},"messages":`, tail: `${hasTools ? `,"tools":${input.toolsJson}` : ""}}` };
}

/** The whole body as a string (see `completionBodyParts`). */
export function buildCompletionBody(input: CompletionInput, d: ShapingDefaults, check = new JsonArrayCheck()): string {
  const { head, tail } = completionBodyParts(input, d, check);
  return `${head}${input.messagesJson}${tail}`;
}

function num(v: number): string {
  return JSON.stringify(v);
}
