// The non-streamed reply of a completion (`stream: false`), shaped as llama-server's.

import type { ChatMessage, renderPrompt } from "./render.js";
import type { ChunkBase, makeTimings } from "./sse.js";

/** The whole reply of a request with `stream: false`, shaped as the real server's. */
export function completionBody(
  base: ChunkBase,
  rendered: ReturnType<typeof renderPrompt>,
  out: { content: string; reasoning: string; calls: Array<{ id: string; name: string; arguments: string }> },
  finish: string,
  total: number,
  predictedN: number,
  cacheN: number,
  timings: ReturnType<typeof makeTimings>,
): Record<string, unknown> {
  const message: Record<string, unknown> = {
    role: "assistant",
    content: (rendered.prefill ? rendered.prefillContent : "") + out.content,
  };
  if (out.reasoning) message.reasoning_content = out.reasoning;
  if (out.calls.length > 0) {
    message.tool_calls = out.calls.map((c) => ({
      type: "function",
      function: { name: c.name, arguments: c.arguments },
      id: c.id,
    }));
  }
  return {
    choices: [{ finish_reason: finish, index: 0, message }],
    created: base.created,
    model: base.model,
    system_fingerprint: base.systemFingerprint,
    object: "chat.completion",
    usage: {
      completion_tokens: predictedN,
      prompt_tokens: total,
      total_tokens: total + predictedN,
      prompt_tokens_details: { cached_tokens: cacheN },
    },
    id: base.id,
    timings,
  };
}

/**
 * The assistant message as the client will send it back next turn, which is
 * what the slot's cache holds after this completion: a continued (prefilled)
 * message keeps its earlier reasoning when this part had none.
 */
export function echoedMessage(
  rendered: ReturnType<typeof renderPrompt>,
  messages: readonly ChatMessage[],
  out: { content: string; reasoning: string; calls: Array<{ id: string; name: string; arguments: string }> },
): ChatMessage {
  const prevReasoning = rendered.prefill ? messages[messages.length - 1]?.reasoning_content : undefined;
  const reasoning = out.reasoning || prevReasoning;
  return {
    role: "assistant",
    content: (rendered.prefill ? rendered.prefillContent : "") + out.content,
    ...(reasoning ? { reasoning_content: reasoning } : {}),
    ...(out.calls.length
      ? {
          tool_calls: out.calls.map((c) => ({
            id: c.id,
            type: "function",
            function: { name: c.name, arguments: c.arguments },
          })),
        }
      : {}),
  };
}
