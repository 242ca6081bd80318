import type { StoredMessage } from "./stored-message.js";

/** What replaces arguments the server cannot parse: an empty object, the same bytes every time. */
export const REPAIRED_ARGUMENTS = "{}";

/**
 * The text a stored message is replayed as. applyRecord found it once (with
 * `replayTextOf`) for every message that can need it; a message made
 * elsewhere is looked at now.
 */
export function replayJson(m: StoredMessage): string {
  return m.replay ?? replayTextOf(m.json) ?? m.json;
}

/** The replay text of a message that can need repair (one with tool calls); undefined for the rest, sent as stored. */
export function replayTextOf(json: string): string | undefined {
  return json.includes('"tool_calls"') ? replayableJson(json) : undefined;
}

/**
 * llama-server parses every earlier tool call's `arguments` as JSON when it
 * renders the prompt, and refuses the whole request when one is not
 * (`HTTP 500: Failed to parse tool call arguments as JSON`). A call the model
 * left unfinished (cut off by max_tokens) would so break every later request
 * of its session. The log keeps the message as the server produced it; the
 * request carries it with such arguments replaced by `{}` (the tool result
 * already told the model the call was not run). A message that needs no repair
 * is returned unchanged, byte for byte.
 */
export function replayableJson(json: string): string {
  let msg: { role?: unknown; tool_calls?: unknown };
  try {
    msg = JSON.parse(json) as typeof msg;
  } catch {
    return json;
  }
  if (msg.role !== "assistant" || !Array.isArray(msg.tool_calls)) return json;
  let changed = false;
  for (const tc of msg.tool_calls as { function?: { arguments?: unknown } }[]) {
    const fn = tc?.function;
    if (!fn || typeof fn !== "object") continue;
    if (typeof fn.arguments === "string" && isJsonObjectText(fn.arguments)) continue;
    fn.arguments = REPAIRED_ARGUMENTS;
    changed = true;
  }
  return changed ? JSON.stringify(msg) : json;
}

export function isJsonObjectText(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}
