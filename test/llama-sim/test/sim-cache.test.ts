// The simulator beyond the recordings: its tokenizer and prompt-cache accounting.

import { describe, expect, it } from "vitest";
import {
  commonPrefixLength,
  countTokens,
  renderMessages,
  renderPrompt,
  tokenize,
  type ChatMessage,
} from "@boxmaker/llama-sim";
import { timingsOf } from "./helpers.js";

import { SYSTEM, TOOLS, assistantFrom, req, useSimClients } from "./sim-fixtures.js";

const client = useSimClients();

describe("tokenizer", () => {
  it("is deterministic, lossless and close to a Qwen tokenizer", () => {
    const text = "List the files in /tmp";
    expect(tokenize(text).join("")).toBe(text);
    expect(countTokens(text)).toBe(6); // the real server: 6 (recording tokenize)
    expect(tokenize("<|im_start|>assistant\n")).toEqual(["<|im_start|>", "assistant", "\n"]);
    const long = "line 12: the quick brown fox jumps over the lazy dog.\n".repeat(100);
    expect(tokenize(long).join("")).toBe(long);
  });

  it("POST /tokenize returns ids, and pieces on request", async () => {
    const c = await client();
    const r = await c.send("POST", "/tokenize", { content: "List the files in /tmp" });
    const ids = (JSON.parse(r.text) as { tokens: number[] }).tokens;
    expect(ids).toHaveLength(6);
    const again = JSON.parse(
      (await c.send("POST", "/tokenize", { content: "List the files in /tmp", with_pieces: true })).text,
    );
    expect(again.tokens.map((t: { piece: string }) => t.piece).join("")).toBe("List the files in /tmp");
    expect(again.tokens.map((t: { id: number }) => t.id)).toEqual(ids);
  });
});

describe("prompt cache accounting", () => {
  it("an exact echo of the streamed assistant message reuses everything", async () => {
    const c = await client();
    const history: ChatMessage[] = [SYSTEM, { role: "user", content: "List the files in /tmp" }];
    c.sim.enqueue({
      reasoning: "The user wants a listing.",
      toolCalls: [{ name: "list_dir", arguments: '{"path": "/tmp"}' }],
    });
    const first = await c.stream(req(history));
    const t1 = timingsOf(first.events)!;
    expect(t1.cache_n).toBe(0);
    expect(t1.prompt_n).toBe(countTokens(renderMessages(history, TOOLS)));

    const echo = assistantFrom(first.events);
    expect(echo.tool_calls?.[0]?.function?.arguments).toBe('{"path": "/tmp"}');
    const next = [...history, echo, { role: "tool", tool_call_id: echo.tool_calls![0]!.id!, content: "a.txt\nb.txt" }];
    c.sim.enqueue({ content: "Two files." });
    const second = await c.stream(req(next));
    const t2 = timingsOf(second.events)!;
    const heldBySlot = renderPrompt([...history, echo], TOOLS, { addGenerationPrompt: false }).text;
    expect(t2.cache_n).toBe(countTokens(heldBySlot));
    expect(t2.cache_n + t2.prompt_n).toBe(countTokens(renderMessages(next, TOOLS)));
    expect(c.sim.slotTokens(0).length).toBeGreaterThan(t2.cache_n + t2.prompt_n);
  });

  it("altering an earlier message drops cache_n to the divergence point", async () => {
    const c = await client();
    const history: ChatMessage[] = [SYSTEM, { role: "user", content: "Read a.txt please" }];
    c.sim.enqueue({ content: "Done reading." });
    const first = await c.stream(req(history));
    const convo = [...history, assistantFrom(first.events), { role: "user", content: "And b.txt" }];
    c.sim.enqueue({ content: "Done too." });
    const full = timingsOf((await c.stream(req(convo))).events)!;

    const altered = convo.map((m, i) => (i === 1 ? { ...m, content: "Read c.txt please" } : m));
    const slotBefore = [...c.sim.slotTokens(0)];
    c.sim.enqueue({ content: "ok" });
    const t = timingsOf((await c.stream(req(altered))).events)!;
    const expected = commonPrefixLength(slotBefore, tokenize(renderMessages(altered, TOOLS)));
    expect(t.cache_n).toBe(expected);
    expect(t.cache_n).toBeLessThan(countTokens(renderMessages([SYSTEM, { role: "user", content: "Read" }], TOOLS)));
    expect(t.cache_n).toBeLessThan(full.cache_n);
  });

  it("dropping reasoning_content diverges at that assistant turn", async () => {
    const c = await client();
    const history: ChatMessage[] = [SYSTEM, { role: "user", content: "Think, then answer." }];
    c.sim.enqueue({ reasoning: "Let me think about it carefully.", content: "Answer." });
    const echo = assistantFrom((await c.stream(req(history))).events);
    expect(echo.reasoning_content).toBe("Let me think about it carefully.");
    const withIt = [...history, echo, { role: "user", content: "Next" }];
    const without = [...history, { role: "assistant", content: echo.content }, { role: "user", content: "Next" }];
    const upToAssistant = countTokens(renderMessages(history, TOOLS));
    c.sim.enqueue({ content: "x" });
    const t = timingsOf((await c.stream(req(without))).events)!;
    // The generation prompt is shared; the think block is where they part.
    expect(t.cache_n).toBe(upToAssistant);
    c.sim.reset();
    c.sim.enqueue({ reasoning: "Let me think about it carefully.", content: "Answer." });
    await c.stream(req(history));
    c.sim.enqueue({ content: "x" });
    const t2 = timingsOf((await c.stream(req(withIt))).events)!;
    expect(t2.cache_n).toBeGreaterThan(upToAssistant + countTokens("Let me think about it carefully."));
  });

  it("the after-last-user think mode re-renders earlier turns without think blocks (recording cache-3)", async () => {
    const c = await client({ thinkBlocks: "after-last-user" });
    const history: ChatMessage[] = [SYSTEM, { role: "user", content: "Think, then answer." }];
    c.sim.enqueue({ reasoning: "Hmm.", content: "Answer." });
    const echo = assistantFrom((await c.stream(req(history))).events);
    c.sim.enqueue({ content: "x" });
    const t = timingsOf((await c.stream(req([...history, echo, { role: "user", content: "Next" }]))).events)!;
    expect(t.cache_n).toBe(countTokens(renderMessages(history, TOOLS)));
  });

  it("changing the tools array invalidates nearly everything", async () => {
    const c = await client();
    const history: ChatMessage[] = [SYSTEM, { role: "user", content: "List the files in /tmp" }];
    c.sim.enqueue({ content: "ok" });
    await c.stream(req(history));
    const more = [
      ...TOOLS,
      {
        type: "function",
        function: { name: "grep_blob", description: "Search a stored blob.", parameters: { type: "object" } },
      },
    ];
    c.sim.enqueue({ content: "ok" });
    const t = timingsOf((await c.stream({ ...req(history), tools: more })).events)!;
    expect(t.cache_n).toBeLessThan(30);
    expect(t.prompt_n).toBeGreaterThan(200);
  });

  it("cache_prompt false reuses nothing; a repeated prompt re-processes one token", async () => {
    const c = await client();
    const history: ChatMessage[] = [SYSTEM, { role: "user", content: "hi" }];
    await c.stream(req(history));
    const again = timingsOf((await c.stream(req(history))).events)!;
    expect(again.prompt_n).toBe(1);
    const cold = timingsOf((await c.stream(req(history, { cache_prompt: false }))).events)!;
    expect(cold.cache_n).toBe(0);
  });
});
