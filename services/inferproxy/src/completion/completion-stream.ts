import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CompletionEventSchema, FinalMessageSchema } from "@boxmaker/common";
import { ToolCallAccumulator, type AccumulatedToolCall, type ToolCallChunk } from "./tool-call-accumulator.js";
import type { ServerErrorBody } from "../error-mapping.js";
import { StreamErrorObject, StreamProtocolError } from "../errors.js";

export type CompletionEventInit = MessageInitShape<typeof CompletionEventSchema>;
export type FinalMessageInit = MessageInitShape<typeof FinalMessageSchema>;

/** One `chat.completion.chunk` as llama-server streams it (only what we read). */
interface Chunk {
  id?: string;
  model?: string;
  choices?: Array<{
    index?: number;
    finish_reason?: string | null;
    delta?: { role?: string; content?: string | null; reasoning_content?: string | null; tool_calls?: ToolCallChunk[] };
  }>;
  prompt_progress?: { total?: number; cache?: number; processed?: number; time_ms?: number };
  timings?: Partial<Record<"cache_n" | "prompt_n" | "prompt_ms" | "predicted_n" | "predicted_ms", number>>;
  error?: ServerErrorBody;
}

/** What a chunk means for the caller, besides the events to forward. */
export interface ChunkResult {
  events: CompletionEventInit[];
  /** Non-empty reasoning deltas in this chunk: the thinking cap counts these. */
  reasoningDeltas: number;
}

/**
 * Turns llama-server's chunks into CompletionEvents and keeps what is needed to
 * rebuild the assistant message exactly as the server produced it. Pure: no
 * I/O and no clock, so recordings replay through it deterministically.
 */
export class CompletionAssembler {
  completionId = "";
  model = "";
  private readonly content: string[] = [];
  private readonly reasoning: string[] = [];
  private readonly tools = new ToolCallAccumulator();
  private finishReason = "";
  private timings: Chunk["timings"] | undefined;
  private reasoningTokens = 0;
  /** Chunks that carried output: llama-server streams one per generated token. */
  private generated = 0;
  private lastProgress: Chunk["prompt_progress"] | undefined;

  get finished(): boolean {
    return this.finishReason !== "";
  }

  /** Feeds one SSE data payload. Throws StreamErrorObject for an in-stream error. */
  onData(data: string): ChunkResult {
    // The end marker carries nothing: `finished` (a finish_reason) is what says the turn is whole.
    if (data === "[DONE]") return { events: [], reasoningDeltas: 0 };
    let chunk: Chunk;
    try {
      chunk = JSON.parse(data) as Chunk;
    } catch {
      throw new StreamProtocolError(`llama-server sent an SSE event that is not JSON: ${data.slice(0, 200)}`);
    }
    return this.onChunk(chunk);
  }

  onChunk(chunk: Chunk): ChunkResult {
    if (chunk.error) throw new StreamErrorObject(chunk.error);
    if (chunk.id && !this.completionId) this.completionId = chunk.id;
    if (chunk.model && !this.model) this.model = chunk.model;
    const events: CompletionEventInit[] = [];
    let reasoningDeltas = 0;
    const p = chunk.prompt_progress;
    if (p) {
      this.lastProgress = p;
      events.push({
        event: {
          case: "progress",
          value: { total: p.total ?? 0, cache: p.cache ?? 0, processed: p.processed ?? 0, timeMs: p.time_ms ?? 0 },
        },
      });
    }
    // llama-server runs one completion per request: choices[0] is all there is.
    const choice = chunk.choices?.[0];
    const delta = choice?.delta;
    if (delta) {
      if (delta.reasoning_content || delta.content || (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0))
        this.generated++;
      if (typeof delta.reasoning_content === "string" && delta.reasoning_content !== "") {
        this.reasoning.push(delta.reasoning_content);
        this.reasoningTokens++;
        reasoningDeltas++;
        events.push({ event: { case: "reasoning", value: { text: delta.reasoning_content } } });
      }
      if (typeof delta.content === "string" && delta.content !== "") {
        this.content.push(delta.content);
        events.push({ event: { case: "content", value: { text: delta.content } } });
      }
      if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) {
        for (const t of this.tools.apply(delta.tool_calls)) {
          events.push({ event: { case: "toolCall", value: t } });
        }
      }
    }
    if (choice?.finish_reason) this.finishReason = choice.finish_reason;
    if (chunk.timings) this.timings = chunk.timings;
    return { events, reasoningDeltas };
  }

  /**
   * The complete turn; `finishReason` overrides the server's (e.g. "aborted" for a partial).
   * `counted`: when the server sent no timings (it never does for a generation its client
   * stopped), they are counted from the stream instead — the prompt read from the last progress
   * report, one generated token per chunk that carried output, the generation time unknown (0).
   */
  message(finishReason?: string, counted = false): FinalMessageInit {
    const fr = finishReason ?? (this.finishReason || "stop");
    const calls = this.tools.size > 0 ? this.tools.finish(fr) : [];
    const content = this.content.join("");
    const reasoning = this.reasoning.join("");
    const p = this.lastProgress;
    const t: Chunk["timings"] | undefined =
      this.timings ??
      (counted
        ? {
            cache_n: p?.cache ?? 0,
            prompt_n: Math.max(0, (p?.processed ?? p?.total ?? 0) - (p?.cache ?? 0)),
            prompt_ms: p?.time_ms ?? 0,
            predicted_n: this.generated,
            predicted_ms: 0,
          }
        : undefined);
    return {
      messageJson: assistantMessageJson(content, reasoning, calls),
      content,
      reasoningContent: reasoning,
      toolCalls: calls.map((c) => ({
        index: c.index,
        id: c.id,
        type: c.type,
        name: c.name,
        arguments: c.arguments,
        parseError: c.parseError,
      })),
      finishReason: fr,
      ...(t
        ? {
            timings: {
              cacheN: t.cache_n ?? 0,
              promptN: t.prompt_n ?? 0,
              promptMs: t.prompt_ms ?? 0,
              predictedN: t.predicted_n ?? 0,
              predictedMs: t.predicted_ms ?? 0,
            },
          }
        : {}),
      completionId: this.completionId,
      model: this.model,
      reasoningTokens: this.reasoningTokens,
    };
  }
}

/**
 * The assistant message loopd stores and replays verbatim, so its bytes must
 * be a pure function of what the server streamed: fixed key order, optional
 * keys present only when the server produced them. `content` is always a
 * string, "" for a tool-call-only turn, as llama-server's own non-streamed
 * answer has it (chat-nonstream-tool-call-xml).
 */
function assistantMessageJson(content: string, reasoning: string, calls: readonly AccumulatedToolCall[]): string {
  const msg: Record<string, unknown> = { role: "assistant", content };
  if (reasoning !== "") msg.reasoning_content = reasoning;
  if (calls.length > 0) {
    msg.tool_calls = calls.map((c) => ({ id: c.id, type: c.type, function: { name: c.name, arguments: c.arguments } }));
  }
  return JSON.stringify(msg);
}
