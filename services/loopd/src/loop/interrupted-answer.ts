import type { FinalMessage } from "@boxmaker/common";
import { isJsonObjectText } from "../sessions/replay.js";

/**
 * The message an answer cut off mid-way (Ctrl-C, the wall budget) is kept as,
 * or undefined when nothing was generated. It is what inferproxy built from
 * the stream — the server's cache holds the same tokens, so the next request,
 * which starts with it, reuses them — except that a tool call the model had
 * not finished (its arguments not yet a JSON object) is dropped: llama-server
 * refuses a prompt whose earlier tool call it cannot parse. Content and
 * reasoning stay as they were streamed; a finished call stays and gets a
 * "cancelled" result like any call the turn did not run.
 */
export function interruptedMessageJson(partial: FinalMessage): string | undefined {
  const finished = partial.toolCalls.filter((c) => isJsonObjectText(c.arguments));
  if (partial.content === "" && partial.reasoningContent === "" && finished.length === 0) return undefined;
  if (finished.length === partial.toolCalls.length) return partial.messageJson;
  const msg = JSON.parse(partial.messageJson) as { tool_calls?: { function?: { arguments?: unknown } }[] };
  const kept = (msg.tool_calls ?? []).filter(
    (tc) => typeof tc.function?.arguments === "string" && isJsonObjectText(tc.function.arguments),
  );
  if (kept.length > 0) msg.tool_calls = kept;
  else delete msg.tool_calls;
  return JSON.stringify(msg);
}
