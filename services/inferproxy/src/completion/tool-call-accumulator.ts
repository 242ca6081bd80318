import { messageOf, type ToolCall } from "@boxmaker/common";

/** One entry of `delta.tool_calls` as llama-server (and OpenAI) stream it. */
export interface ToolCallChunk {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

/** What is forwarded to loopd for one chunk: id, type and name only on an index's first delta. */
export interface ToolCallDeltaOut {
  index: number;
  id: string;
  type: string;
  name: string;
  argumentsDelta: string;
}

/**
 * A finished tool call: the generated ToolCall message's fields (infer.proto),
 * plus the parsed arguments for the assistant message inferproxy writes.
 */
export type AccumulatedToolCall = Omit<ToolCall, "$typeName" | "$unknown"> & {
  /** The parsed arguments when they are a JSON object. */
  parsed?: Record<string, unknown>;
};

interface Slot {
  index: number;
  id: string;
  type: string;
  name: string;
  args: string[];
}

/**
 * Accumulates streamed tool-call deltas. The first delta for an index carries
 * id, type and name (arguments may be ""); later ones append argument text.
 * Arguments are parsed only when the set is closed, because a prefix of valid
 * JSON is almost never valid JSON itself.
 */
export class ToolCallAccumulator {
  private readonly calls = new Map<number, Slot>();
  private lastIndex = 0;

  get size(): number {
    return this.calls.size;
  }

  apply(chunks: readonly ToolCallChunk[]): ToolCallDeltaOut[] {
    const out: ToolCallDeltaOut[] = [];
    for (const c of chunks) {
      // A server that omits index is continuing the call it is on.
      const index = typeof c.index === "number" ? c.index : this.lastIndex;
      this.lastIndex = index;
      const argText = typeof c.function?.arguments === "string" ? c.function.arguments : "";
      let slot = this.calls.get(index);
      if (!slot) {
        slot = { index, id: c.id ?? "", type: c.type ?? "function", name: c.function?.name ?? "", args: [] };
        this.calls.set(index, slot);
        if (argText) slot.args.push(argText);
        out.push({ index, id: slot.id, type: slot.type, name: slot.name, argumentsDelta: argText });
        continue;
      }
      // llama-server names a call once; a late id or name fills a gap, never rewrites.
      let id = "";
      let name = "";
      if (!slot.id && c.id) slot.id = id = c.id;
      if (!slot.name && c.function?.name) slot.name = name = c.function.name;
      if (argText) slot.args.push(argText);
      if (argText || id || name) out.push({ index, id, type: "", name, argumentsDelta: argText });
    }
    return out;
  }

  /**
   * Closes the set. `finishReason` only sharpens the message: a call cut off
   * by `length` is reported as such, with its raw text kept.
   */
  finish(finishReason = "tool_calls"): AccumulatedToolCall[] {
    return [...this.calls.values()]
      .sort((a, b) => a.index - b.index)
      .map((s) => {
        const raw = s.args.join("");
        const { parsed, error } = parseArguments(raw);
        const parseError =
          error && finishReason === "length" ? `${error} (the call was cut off: finish_reason length)` : error;
        return {
          index: s.index,
          id: s.id,
          type: s.type,
          name: s.name,
          arguments: raw,
          parseError,
          ...(parsed ? { parsed } : {}),
        };
      });
  }
}

export function parseArguments(raw: string): { parsed?: Record<string, unknown>; error: string } {
  if (raw.trim() === "") return { error: "arguments are empty" };
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch (err) {
    return { error: `arguments are not valid JSON: ${messageOf(err)}` };
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    return {
      error: `arguments are JSON but not an object (${v === null ? "null" : Array.isArray(v) ? "array" : typeof v})`,
    };
  }
  return { parsed: v as Record<string, unknown>, error: "" };
}
