// Behaviour of the simulator beyond the recordings: cache accounting, slots,
// control calls, scripted faults, the admin API and the CLI.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import {
  commonPrefixLength,
  countTokens,
  renderMessages,
  renderPrompt,
  tokenize,
  type ChatMessage,
} from "@boxmaker/llama-sim";
import { contentOf, startClient, timingsOf, type SimClient } from "./helpers.js";

const TOOLS = [
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
const SYSTEM: ChatMessage = {
  role: "system",
  content: "You are Boxmaker, an agent on the operator's workstation. Use tools when they help.",
};

let clients: SimClient[] = [];
async function client(opts: Parameters<typeof startClient>[0] = {}): Promise<SimClient> {
  const c = await startClient(opts);
  clients.push(c);
  return c;
}
afterEach(async () => {
  await Promise.all(clients.map((c) => c.close()));
  clients = [];
});

const req = (messages: ChatMessage[], extra: Record<string, unknown> = {}) => ({
  messages,
  tools: TOOLS,
  id_slot: 0,
  cache_prompt: true,
  stream: true,
  return_progress: true,
  ...extra,
});

type Chunk = {
  choices?: Array<{ finish_reason: string | null; delta: Record<string, unknown> }>;
  error?: Record<string, unknown>;
  prompt_progress?: Record<string, number>;
  timings?: Record<string, number>;
  id?: string;
};
const chunks = (events: string[]) => events.filter((e) => e !== "[DONE]").map((e) => JSON.parse(e) as Chunk);

/** The assistant message a client assembles from a stream, exactly as streamed. */
function assistantFrom(events: string[]): ChatMessage {
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

describe("streams and responses", () => {
  it("emits progress per 2,048-token batch, then reasoning, content, tool calls, final, DONE", async () => {
    const c = await client();
    const big = "word ".repeat(5000);
    c.sim.enqueue({
      reasoning: "Thinking hard.",
      content: "Calling now.",
      toolCalls: [{ id: "call-1", name: "read_file", arguments: '{"path": "a.txt", "note": "quotes \\" & <>"}' }],
    });
    const r = await c.stream(req([SYSTEM, { role: "user", content: big }]));
    expect(r.contentType).toBe("text/event-stream");
    expect(r.events.at(-1)).toBe("[DONE]");
    const cs = chunks(r.events);
    const progress = cs.filter((x) => x.prompt_progress).map((x) => x.prompt_progress!);
    const total = progress[0]!.total!;
    expect(progress[0]!.processed).toBe(0);
    expect(progress.at(-1)!.processed).toBe(total);
    expect(progress).toHaveLength(1 + Math.ceil(total / 2048));
    const tc = cs.flatMap((x) => (x.choices?.[0]?.delta.tool_calls as Array<Record<string, any>> | undefined) ?? []);
    expect(tc.length).toBeGreaterThan(3);
    expect(Object.keys(tc[0]!)).toEqual(["index", "id", "type", "function"]);
    expect(tc[0]!.function.name).toBe("read_file");
    expect(Object.keys(tc[1]!)).toEqual(["index", "function"]);
    expect(tc.map((t) => t.function.arguments).join("")).toBe('{"path": "a.txt", "note": "quotes \\" & <>"}');
    const final = cs.at(-1)!;
    expect(final.choices![0]!.finish_reason).toBe("tool_calls");
    expect(Object.keys(final.timings!)).toEqual([
      "cache_n",
      "prompt_n",
      "prompt_ms",
      "prompt_per_token_ms",
      "prompt_per_second",
      "predicted_n",
      "predicted_ms",
      "predicted_per_token_ms",
      "predicted_per_second",
    ]);
    expect(contentOf(r.events, "reasoning_content")).toBe("Thinking hard.");
    expect(contentOf(r.events)).toBe("Calling now.");
  });

  it("argumentChunkSize sets the characters per arguments delta", async () => {
    const c = await client();
    c.sim.enqueue({ toolCalls: [{ name: "list_dir", arguments: '{"path":"/tmp"}' }], argumentChunkSize: 4 });
    const r = await c.stream(req([SYSTEM, { role: "user", content: "ls" }]));
    const args = chunks(r.events).flatMap(
      (x) => (x.choices?.[0]?.delta.tool_calls as Array<Record<string, any>> | undefined) ?? [],
    );
    expect(args.map((a) => a.function.arguments)).toEqual(['{"pa', 'th":', '"/tm', 'p"}']);
  });

  it("non-streamed: chat.completion with usage and timings", async () => {
    const c = await client();
    c.sim.enqueue({ reasoning: "r", content: "Hello.", toolCalls: [{ id: "x1", name: "list_dir", arguments: "{}" }] });
    const r = await c.send(
      "POST",
      "/v1/chat/completions",
      req([SYSTEM, { role: "user", content: "hi" }], { stream: false }),
    );
    expect(r.status).toBe(200);
    const o = JSON.parse(r.text);
    expect(o.object).toBe("chat.completion");
    expect(o.choices[0].finish_reason).toBe("tool_calls");
    expect(o.choices[0].message).toEqual({
      role: "assistant",
      content: "Hello.",
      reasoning_content: "r",
      tool_calls: [{ type: "function", function: { name: "list_dir", arguments: "{}" }, id: "x1" }],
    });
    expect(o.usage.prompt_tokens).toBe(o.timings.cache_n + o.timings.prompt_n);
    expect(o.usage.prompt_tokens_details.cached_tokens).toBe(o.timings.cache_n);
    expect(o.usage.total_tokens).toBe(o.usage.prompt_tokens + o.usage.completion_tokens);
  });

  it("max_tokens cuts the output with finish_reason length, mid tool call if need be", async () => {
    const c = await client();
    c.sim.enqueue({ toolCalls: [{ name: "read_file", arguments: '{"path": "some/long/path/to/a/file.txt"}' }] });
    const r = await c.stream(req([SYSTEM, { role: "user", content: "read" }], { max_tokens: 3 }));
    const cs = chunks(r.events);
    expect(cs.at(-1)!.choices![0]!.finish_reason).toBe("length");
    expect(cs.at(-1)!.timings!.predicted_n).toBe(3);
    expect(cs.filter((x) => x.choices?.[0]?.delta.tool_calls)).toHaveLength(3);
  });

  it("without a script, the default responder mentions the last user message", async () => {
    const c = await client();
    const r = await c.stream(req([SYSTEM, { role: "user", content: "What is in /etc/hosts?" }]));
    expect(contentOf(r.events)).toContain("What is in /etc/hosts?");
    expect(chunks(r.events).at(-1)!.choices![0]!.finish_reason).toBe("stop");
  });

  it("logs requests with raw body, slot and timings", async () => {
    const c = await client();
    c.sim.enqueue({ content: "ok" });
    const body = req([SYSTEM, { role: "user", content: "hi" }], { id_slot: 2 });
    await c.stream(body);
    const e = c.sim.completions.at(-1)!;
    expect(e.rawBody).toBe(JSON.stringify(body));
    expect(e.body).toEqual(body);
    expect(e.slot).toBe(2);
    expect(e.timings?.prompt_n).toBeGreaterThan(0);
    expect(e.outcome).toBe("completed");
    expect(e.output?.content).toBe("ok");
  });
});

describe("errors and faults", () => {
  it("context overflow is a 400 JSON error, also when streaming", async () => {
    const c = await client({ nCtx: 64 });
    for (const stream of [false, true]) {
      const r = await c.send(
        "POST",
        "/v1/chat/completions",
        req([SYSTEM, { role: "user", content: "word ".repeat(200) }], { stream }),
      );
      expect(r.status).toBe(400);
      expect(r.contentType).toBe("application/json; charset=utf-8");
      const e = JSON.parse(r.text).error;
      expect(e.type).toBe("exceed_context_size_error");
      expect(e.n_ctx).toBe(64);
      expect(e.n_prompt_tokens).toBeGreaterThan(64);
    }
  });

  it("malformed JSON is a 500", async () => {
    const c = await client();
    const r = await c.send("POST", "/v1/chat/completions", "{not json");
    expect(r.status).toBe(500);
    expect(JSON.parse(r.text).error.type).toBe("server_error");
  });

  it("answers 503 while loading, then 200", async () => {
    const c = await client({ loading: true });
    expect((await c.send("GET", "/health")).status).toBe(503);
    expect((await c.send("POST", "/v1/chat/completions", req([{ role: "user", content: "x" }]))).status).toBe(503);
    c.sim.setLoading(false);
    const r = await c.send("GET", "/health");
    expect(r.status).toBe(200);
    expect(r.text).toBe('{"status":"ok"}');
  });

  it("an error inside the 200 stream after N tokens ends the stream without DONE", async () => {
    const c = await client();
    c.sim.enqueue({ content: ["a", "b", "c", "d"], errorInStream: { afterTokens: 2, message: "parser failed" } });
    const r = await c.stream(req([SYSTEM, { role: "user", content: "x" }]));
    expect(r.status).toBe(200);
    expect(r.events.at(-1)).toBe('{"error":{"code":500,"message":"parser failed","type":"server_error"}}');
    expect(r.events).not.toContain("[DONE]");
    expect(contentOf(r.events)).toBe("ab");
    // Non-streamed, the same fault is an HTTP error.
    c.sim.enqueue({ content: "a", errorInStream: {} });
    const n = await c.send(
      "POST",
      "/v1/chat/completions",
      req([SYSTEM, { role: "user", content: "x" }], { stream: false }),
    );
    expect(n.status).toBe(500);
  });

  it("httpError answers with the scripted status and body", async () => {
    const c = await client();
    c.sim.enqueue({
      httpError: { status: 502, body: { error: { code: 502, message: "bad gateway", type: "server_error" } } },
    });
    const r = await c.send("POST", "/v1/chat/completions", req([{ role: "user", content: "x" }]));
    expect(r.status).toBe(502);
    expect(JSON.parse(r.text).error.message).toBe("bad gateway");
  });

  it("silence holds the stream quiet after N tokens", async () => {
    const c = await client();
    c.sim.enqueue({ content: ["a", "b", "c"], silenceMs: 300, silenceAfterTokens: 1 });
    const times: number[] = [];
    await c.stream(req([SYSTEM, { role: "user", content: "x" }]), () => {
      times.push(performance.now());
    });
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(Math.max(...gaps)).toBeGreaterThanOrEqual(280);
  });

  it("dropAfterTokens destroys the socket mid-stream and frees the slot", async () => {
    const c = await client();
    c.sim.enqueue({ content: ["a", "b", "c", "d"], dropAfterTokens: 2 });
    const seen: string[] = [];
    await expect(c.stream(req([SYSTEM, { role: "user", content: "x" }]), (e) => void seen.push(e))).rejects.toThrow();
    expect(seen).not.toContain("[DONE]");
    await c.sim.waitIdle(0);
    expect(c.sim.isProcessing(0)).toBe(false);
    expect(c.sim.completions.at(-1)!.outcome).toBe("dropped");
  });

  it("a client disconnect stops generation promptly and frees the slot", async () => {
    const c = await client();
    c.sim.enqueue({ content: Array.from({ length: 200 }, () => "tok "), tokenDelayMs: 10 });
    const ac = new AbortController();
    let n = 0;
    await expect(
      c.stream(
        req([SYSTEM, { role: "user", content: "x" }]),
        () => {
          if (++n === 5) ac.abort();
        },
        ac.signal,
      ),
    ).rejects.toThrow();
    const t0 = performance.now();
    await c.sim.waitIdle(0);
    expect(performance.now() - t0).toBeLessThan(200);
    const slots = JSON.parse((await c.send("GET", "/slots")).text);
    expect(slots[0].is_processing).toBe(false);
    const e = c.sim.completions.at(-1)!;
    expect(e.outcome).toBe("aborted");
    expect(e.output!.content.length).toBeLessThan(200 * 4);
  });
});

describe("reasoning control", () => {
  it("reasoning_end switches a running completion from reasoning to content", async () => {
    const c = await client();
    c.sim.enqueue({ reasoning: Array.from({ length: 100 }, () => " hmm"), content: "Final answer.", tokenDelayMs: 10 });
    let reply: string | undefined;
    let n = 0;
    const r = await c.stream(
      req([SYSTEM, { role: "user", content: "Think." }], { reasoning_control: true }),
      async (e) => {
        if (e === "[DONE]") return;
        const o = JSON.parse(e) as Chunk;
        if (o.choices?.[0]?.delta.reasoning_content && ++n === 5) {
          reply = (await c.send("POST", "/v1/chat/completions/control", { id: o.id, action: "reasoning_end" })).text;
        }
      },
    );
    expect(reply).toBe('{"success":true}');
    const reasoning = contentOf(r.events, "reasoning_content");
    expect(reasoning.length).toBeLessThan(100 * 4);
    expect(contentOf(r.events)).toBe("Final answer.");
    expect(c.sim.controlCalls.at(-1)).toMatchObject({ action: "reasoning_end", status: 200 });
    // The cache now holds the cut reasoning, as the client will echo it.
    expect(c.sim.slotTokens(0).join("")).toContain(`<think>\n${reasoning}\n</think>`);
  });

  it("refuses when the completion was sent without reasoning_control, and for unknown ids and actions", async () => {
    const c = await client();
    c.sim.enqueue({ reasoning: Array.from({ length: 50 }, () => " hmm"), tokenDelayMs: 5 });
    let reply: string | undefined;
    await c.stream(req([{ role: "user", content: "Think." }]), async (e) => {
      if (e === "[DONE]") return;
      const o = JSON.parse(e) as Chunk;
      if (o.choices?.[0]?.delta.reasoning_content && !reply) {
        reply = (await c.send("POST", "/v1/chat/completions/control", { id: o.id, action: "reasoning_end" })).text;
      }
    });
    expect(JSON.parse(reply!).success).toBe(false);
    const unknown = await c.send("POST", "/v1/chat/completions/control", {
      id: "chatcmpl-nope",
      action: "reasoning_end",
    });
    expect(unknown.status).toBe(200);
    expect(unknown.text).toBe('{"success":false,"message":"no active completion for this id"}');
    const bad = await c.send("POST", "/v1/chat/completions/control", { id: "chatcmpl-nope", action: "stop_now" });
    expect(bad.status).toBe(400);
  });
});

describe("slots", () => {
  it("GET /slots shows the running task live: n_decoded rises while quiet (busy), stands still while silent (hung)", async () => {
    const c = await client();
    type S = { id: number; is_processing: boolean; id_task?: number; next_token?: Array<{ n_decoded: number }> };
    const slot0 = async () => (JSON.parse((await c.send("GET", "/slots")).text) as S[])[0]!;
    const watch = async (turn: Record<string, unknown>) => {
      c.sim.enqueue(turn);
      const seen: S[] = [];
      let polling = true;
      const poll = (async () => {
        while (polling) {
          const s = await slot0();
          if (s.is_processing) seen.push(s);
          await new Promise((r) => setTimeout(r, 60));
        }
      })();
      await c.stream(req([SYSTEM, { role: "user", content: "x" }], { id_slot: 0 }));
      polling = false;
      await poll;
      return seen;
    };
    const quiet = await watch({ content: ["a", "b"], quietMs: 400, quietAfterTokens: 1 });
    const q = quiet.map((s) => s.next_token![0]!.n_decoded);
    expect(q.length).toBeGreaterThanOrEqual(3);
    expect(q.at(-1)!).toBeGreaterThan(q[0]!);
    expect(new Set(quiet.map((s) => s.id_task)).size).toBe(1);
    const hung = await watch({ content: ["a", "b"], silenceMs: 400, silenceAfterTokens: 1 });
    expect(hung.length).toBeGreaterThanOrEqual(3);
    expect(new Set(hung.map((s) => s.next_token![0]!.n_decoded)).size).toBe(1);
    expect(hung[0]!.id_task).not.toBe(quiet[0]!.id_task);
  });

  it("save, erase and restore bring back the cached prefix", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "llama-sim-save-"));
    const c = await client({ slotSavePath: dir });
    const history: ChatMessage[] = [SYSTEM, { role: "user", content: "Remember this." }];
    c.sim.enqueue({ content: "Remembered." });
    const echo = assistantFrom((await c.stream(req(history, { id_slot: 1 }))).events);
    const held = c.sim.slotTokens(1).length;

    const save = JSON.parse((await c.send("POST", "/slots/1?action=save", { filename: "s.bin" })).text);
    expect(save).toMatchObject({ id_slot: 1, filename: "s.bin", n_saved: held });
    expect(existsSync(path.join(dir, "s.bin"))).toBe(true);
    expect(JSON.parse((await c.send("POST", "/slots/1?action=erase")).text)).toEqual({ id_slot: 1, n_erased: held });
    expect(c.sim.slotTokens(1)).toHaveLength(0);
    const restore = JSON.parse((await c.send("POST", "/slots/1?action=restore", { filename: "s.bin" })).text);
    expect(restore).toMatchObject({ id_slot: 1, filename: "s.bin", n_restored: held, n_read: save.n_written });

    c.sim.enqueue({ content: "ok" });
    const t = timingsOf(
      (await c.stream(req([...history, echo, { role: "user", content: "Go on" }], { id_slot: 1 }))).events,
    )!;
    expect(t.cache_n).toBe(held);

    const missing = await c.send("POST", "/slots/0?action=restore", { filename: "missing.bin" });
    expect(missing.status).toBe(400);
    writeFileSync(path.join(dir, "junk.bin"), "junk");
    expect((await c.send("POST", "/slots/0?action=restore", { filename: "junk.bin" })).status).toBe(400);
    expect((await c.send("POST", "/slots/0?action=save", { filename: "../escape.bin" })).status).toBe(400);
  });

  it("slot actions need a slot save path, like the real server", async () => {
    const c = await client();
    expect((await c.send("POST", "/slots/0?action=save", { filename: "a.bin" })).status).toBe(501);
  });

  it("id_slot wraps around; without it the least recently used idle slot is taken", async () => {
    const c = await client();
    await c.stream(req([{ role: "user", content: "a" }], { id_slot: 4 }));
    expect(c.sim.completions.at(-1)!.slot).toBe(1);
    const { id_slot: _drop, ...noSlot } = req([{ role: "user", content: "b" }]);
    await c.stream(noSlot);
    expect(c.sim.completions.at(-1)!.slot).toBe(0);
    await c.stream(noSlot);
    expect(c.sim.completions.at(-1)!.slot).toBe(2);
    await c.stream(noSlot);
    expect(c.sim.completions.at(-1)!.slot).toBe(1);
  });

  it("requests for a busy slot wait their turn; maxConcurrentPerSlot shows the overlap", async () => {
    const c = await client();
    c.sim.enqueue({ content: ["a1", "a2", "a3", "a4"], tokenDelayMs: 20 }, 0);
    c.sim.enqueue({ content: ["b1", "b2"] }, 0);
    c.sim.enqueue({ content: ["c1"] }, 2);
    const order: string[] = [];
    const log = (tag: string) => (e: string) => {
      if (e === "[DONE]") order.push(`${tag}:done`);
      else {
        const d = (JSON.parse(e) as Chunk).choices?.[0]?.delta.content;
        if (typeof d === "string") order.push(d);
      }
    };
    const a = c.stream(req([{ role: "user", content: "first" }]), log("a"));
    await new Promise((r) => setTimeout(r, 10));
    const b = c.stream(req([{ role: "user", content: "second" }]), log("b"));
    const other = c.stream(req([{ role: "user", content: "other" }], { id_slot: 2 }));
    await Promise.all([a, b, other]);
    expect(order.filter((x) => !x.startsWith("c"))).toEqual(["a1", "a2", "a3", "a4", "a:done", "b1", "b2", "b:done"]);
    expect(c.sim.maxConcurrentPerSlot).toEqual([2, 0, 1]);
  });

  it("GET /slots reports per-slot n_ctx and is_processing", async () => {
    const c = await client({ totalSlots: 2, nCtx: 4096 });
    c.sim.enqueue({ content: Array.from({ length: 30 }, () => "x"), tokenDelayMs: 10 });
    const running = c.stream(req([{ role: "user", content: "x" }], { id_slot: 1 }));
    await new Promise((r) => setTimeout(r, 60));
    const slots = JSON.parse((await c.send("GET", "/slots")).text);
    expect(
      slots.map((s: { id: number; n_ctx: number; is_processing: boolean }) => [s.id, s.n_ctx, s.is_processing]),
    ).toEqual([
      [0, 4096, false],
      [1, 4096, true],
    ]);
    await running;
    const props = JSON.parse((await c.send("GET", "/props")).text);
    expect(props.total_slots).toBe(2);
    expect(props.default_generation_settings.n_ctx).toBe(4096);
  });
});

describe("admin HTTP API", () => {
  it("scripts turns, reads the log, toggles loading and resets", async () => {
    const c = await client();
    const s = await c.send("POST", "/__sim/script", { turns: [{ content: "scripted over HTTP" }], slot: 0 });
    expect(JSON.parse(s.text)).toEqual({ queued: 1, pending: 1 });
    expect((await c.send("POST", "/__sim/script", { contnet: "typo" })).status).toBe(400);
    const r = await c.stream(req([{ role: "user", content: "x" }]));
    expect(contentOf(r.events)).toBe("scripted over HTTP");
    await c.send("POST", "/v1/chat/completions/control", { id: "nope", action: "reasoning_end" });
    const log = JSON.parse((await c.send("GET", "/__sim/requests")).text);
    expect(log.requests.find((e: { path: string }) => e.path === "/v1/chat/completions").slot).toBe(0);
    expect(log.controlCalls).toHaveLength(1);
    await c.send("POST", "/__sim/loading", { loading: true });
    expect((await c.send("GET", "/health")).status).toBe(503);
    await c.send("POST", "/__sim/loading", { loading: false });
    const state = JSON.parse((await c.send("GET", "/__sim/state")).text);
    expect(state.slots[0].nTokens).toBeGreaterThan(0);
    await c.send("POST", "/__sim/reset");
    expect(c.sim.requests).toHaveLength(0);
    expect(c.sim.slotTokens(0)).toHaveLength(0);
  });
});

const mainJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../dist/main.js");

describe("CLI", () => {
  it.skipIf(!existsSync(mainJs))(
    "listens on a socket, takes a script file, removes its socket on SIGTERM",
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), "llama-sim-cli-"));
      const socketPath = path.join(dir, "llama.sock");
      writeFileSync(socketPath, "stale");
      const script = path.join(dir, "script.json");
      writeFileSync(script, JSON.stringify([{ content: "from the script file" }]));
      const child = spawn(process.execPath, [mainJs, "--socket", socketPath, "--slots", "2", "--script", script], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      const line = await new Promise<string>((resolve, reject) => {
        child.stdout.once("data", (b: Buffer) => resolve(b.toString()));
        child.once("exit", (code) => reject(new Error(`exited ${code}`)));
      });
      expect(line).toContain(`listening on unix:${socketPath}`);
      const agent = new Agent({ connect: { socketPath } });
      const res = await request("http://localhost/v1/chat/completions", {
        method: "POST",
        dispatcher: agent,
        body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], stream: false }),
      });
      expect((await res.body.json()) as unknown).toMatchObject({
        choices: [{ message: { content: "from the script file" } }],
      });
      await agent.close();
      const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      child.kill("SIGTERM");
      expect(await exit).toBe(0);
      expect(existsSync(socketPath)).toBe(false);
    },
  );
});
