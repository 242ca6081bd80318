// Prompt rendering in the shape of a ChatML/Qwen template. The simulator
// never needs the exact production template; it needs the properties the
// prompt cache depends on: tool schemas first, every message rendered from
// exactly the bytes the client sent, and an assistant turn rendering the same
// whether it is being generated or echoed back later.

interface ToolCallIn {
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: unknown };
  // Some clients send the flat form; templates accept both.
  name?: string;
  arguments?: unknown;
}

export interface ChatMessage {
  role: string;
  content?: unknown;
  reasoning_content?: string | null;
  tool_calls?: ToolCallIn[] | null;
  tool_call_id?: string;
  name?: string;
}

export type ThinkBlocks =
  /** Every assistant turn keeps its think block (the production template, contract.md). */
  | "all"
  /** Only turns after the last user message keep it (Qwen3's template, recording cache-3). */
  | "after-last-user";

export interface RenderOptions {
  thinkBlocks?: ThinkBlocks;
}

export interface RenderedPrompt {
  text: string;
  /** The last message was an assistant message: the model continues it (llama.cpp prefill). */
  prefill: boolean;
  /** Text of the prefilled assistant message the model continues, as the stream reports it. */
  prefillContent: string;
}

export function contentText(content: unknown): string {
  if (content == null) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        if (typeof part === "string") return part;
        if (part && typeof part === "object" && typeof (part as { text?: unknown }).text === "string") {
          return (part as { text: string }).text;
        }
        return "";
      })
      .join("");
  }
  return JSON.stringify(content);
}

/**
 * The tools block heads the prompt. It states how many tools follow before
 * listing them: on the production server adding one tool to the array cost
 * the whole prompt (cache_n 23, contract.md), and a count near the top is the
 * simplest honest way to make any change to the array diverge early.
 */
function renderTools(tools: readonly unknown[]): string {
  let out = `# Tools\n\nYou may call one or more of these ${tools.length} functions. Their signatures are within <tools></tools> XML tags:\n<tools>`;
  for (const tool of tools) out += `\n${JSON.stringify(tool)}`;
  out +=
    "\n</tools>\n\nTo call a function, return a JSON object with the function name and arguments within <tool_call></tool_call> XML tags.";
  return out;
}

function renderToolCall(call: ToolCallIn): string {
  const fn = call.function ?? call;
  const args = fn.arguments;
  // Arguments are rendered from the raw string the client holds, so an echo
  // of exactly what was streamed renders byte for byte the same.
  const argText = typeof args === "string" ? args : JSON.stringify(args ?? {});
  return `<tool_call>\n{"name": "${fn.name ?? ""}", "arguments": ${argText}}\n</tool_call>`;
}

/** The body of an assistant turn: think block, content, tool calls (no header, no end token). */
export function renderAssistantBody(msg: ChatMessage, withThink: boolean): string {
  let out = "";
  const reasoning = msg.reasoning_content;
  if (withThink && typeof reasoning === "string" && reasoning.length > 0) {
    out += `<think>\n${reasoning.replace(/^\n+|\n+$/g, "")}\n</think>\n\n`;
  }
  const content = contentText(msg.content);
  out += content;
  (msg.tool_calls ?? []).forEach((call, i) => {
    if (i > 0 || content.length > 0) out += "\n";
    out += renderToolCall(call);
  });
  return out;
}

export function renderPrompt(
  messages: readonly ChatMessage[],
  tools: readonly unknown[] | null | undefined,
  opts: RenderOptions & { addGenerationPrompt?: boolean } = {},
): RenderedPrompt {
  const thinkBlocks = opts.thinkBlocks ?? "all";
  const addGenerationPrompt = opts.addGenerationPrompt ?? true;
  let out = "";
  let start = 0;
  const hasTools = Array.isArray(tools) && tools.length > 0;
  const first = messages[0];
  if (hasTools) {
    out += `<|im_start|>system\n${renderTools(tools)}`;
    if (first?.role === "system") {
      out += `\n\n${contentText(first.content)}`;
      start = 1;
    }
    out += "<|im_end|>\n";
  }
  let lastUser = -1;
  messages.forEach((m, i) => {
    if (m.role === "user") lastUser = i;
  });
  const last = messages[messages.length - 1];
  const prefill = addGenerationPrompt && last?.role === "assistant";
  for (let i = start; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === "assistant") {
      const withThink = thinkBlocks === "all" || i > lastUser;
      out += `<|im_start|>assistant\n${renderAssistantBody(m, withThink)}`;
      if (!(prefill && i === messages.length - 1)) out += "<|im_end|>\n";
    } else {
      out += `<|im_start|>${m.role}\n${contentText(m.content)}<|im_end|>\n`;
    }
  }
  if (addGenerationPrompt && !prefill) out += "<|im_start|>assistant\n";
  return { text: out, prefill, prefillContent: prefill && last ? contentText(last.content) : "" };
}

/** The rendered prompt text for these messages and tools, with the generation prompt. */
export function renderMessages(
  messages: readonly ChatMessage[],
  tools?: readonly unknown[] | null,
  opts: RenderOptions = {},
): string {
  return renderPrompt(messages, tools, opts).text;
}
