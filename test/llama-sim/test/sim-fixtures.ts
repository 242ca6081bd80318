// Shared by the simulator's behaviour tests (sim-*.test.ts): a tools array and
// system prompt like the harness sends, request builders, stream readers.

import { afterEach } from "vitest";
import type { ChatMessage } from "@boxmaker/llama-sim";
import { contentOf, startClient, type SimClient } from "./helpers.js";

export const TOOLS = [
  {
    type: "function",
    function: {
      name: "read_file",
      description: "Read a text file in the workspace.",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    },
  },
  {
    type: "function",
    function: {
      name: "list_dir",
      description: "List a directory in the workspace.",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    },
  },
];
export const SYSTEM: ChatMessage = {
  role: "system",
  content: "You are Boxmaker, an agent on the operator's workstation. Use tools when they help.",
};

/** A client factory whose simulators are closed after each test of the file that calls this. */
export function useSimClients(): (opts?: Parameters<typeof startClient>[0]) => Promise<SimClient> {
  let clients: SimClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.map((c) => c.close()));
    clients = [];
  });
  return async (opts = {}) => {
    const c = await startClient(opts);
    clients.push(c);
    return c;
  };
}

export const req = (messages: ChatMessage[], extra: Record<string, unknown> = {}) => ({
  messages,
  tools: TOOLS,
  id_slot: 0,
  cache_prompt: true,
  stream: true,
  return_progress: true,
  ...extra,
});

export type Chunk = {
  choices?: Array<{ finish_reason: string | null; delta: Record<string, unknown> }>;
  error?: Record<string, unknown>;
  prompt_progress?: Record<string, number>;
  timings?: Record<string, number>;
  id?: string;
};
export const chunks = (events: string[]) => events.filter((e) => e !== "[DONE]").map((e) => JSON.parse(e) as Chunk);

/** The assistant message a client assembles from a stream, exactly as streamed. */
export function assistantFrom(events: string[]): ChatMessage {
  const msg: ChatMessage = { role: "assistant", content: contentOf(events) };
  const reasoning = contentOf(events, "reasoning_content");
  if (reasoning) msg.reasoning_content = reasoning;
  const calls: Array<{ id: string; type: string; function: { name: string; arguments: string } }> = [];
  for (const c of chunks(events)) {
    for (const tc of (c.choices?.[0]?.delta.tool_calls as Array<Record<string, any>> | undefined) ?? []) {
      if (tc.id)
        calls[tc.index] = {
          id: tc.id,
          type: "function",
          function: { name: tc.function.name, arguments: tc.function.arguments },
        };
      else calls[tc.index]!.function.arguments += tc.function.arguments;
    }
  }
  if (calls.length) msg.tool_calls = calls;
  return msg;
}
