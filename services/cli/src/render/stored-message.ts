import type { HistoryMessage } from "@boxmaker/common/client";

/** A chat-completions message as loopd stores it (exactly what the server saw). */
export interface StoredMessage {
  role: string;
  content?: string | { type?: string; text?: string }[] | null;
  reasoning_content?: string | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

/** The text of a message's content, whether a string or an array of parts. */
export const contentText = (c: StoredMessage["content"]): string =>
  typeof c === "string" ? c : Array.isArray(c) ? c.map((p) => p.text ?? "").join("") : "";

/** A history entry's stored message; a damaged one is shown as it is rather than dropped. */
export function parseStored(m: HistoryMessage): StoredMessage {
  try {
    return JSON.parse(m.messageJson) as StoredMessage;
  } catch {
    return { role: "unparseable", content: m.messageJson };
  }
}
