/**
 * The JSON text of the messages loopd writes itself. Key order is fixed here
 * so the same message always has the same bytes, in the log and on the wire.
 */
export const systemMessageJson = (content: string) => JSON.stringify({ role: "system", content });
export const userMessageJson = (content: string) => JSON.stringify({ role: "user", content });
export const toolMessageJson = (toolCallId: string, content: string) =>
  JSON.stringify({ role: "tool", tool_call_id: toolCallId, content });

/** The user's text, preceded by what happened since the last turn (late approval decisions). */
export function withNotes(text: string, notes: readonly string[]): string {
  if (notes.length === 0) return text;
  return `${notes.map((n) => `[Boxmaker: ${n}]`).join("\n")}\n\n${text}`;
}
