import { describe, expect, it } from "vitest";
import { contentOf } from "./helpers.js";

import { SYSTEM, chunks, req, useSimClients } from "./sim-fixtures.js";

const client = useSimClients();

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
