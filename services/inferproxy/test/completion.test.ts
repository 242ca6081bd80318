import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Status } from "@boxmaker/common";
import { collect, startStack, text, userMessages, type Stack } from "./support/stack.js";
import { deferred } from "./support/fake-stream.js";

let s: Stack;
afterEach(async () => {
  await s?.close();
});

describe("Complete against the simulator", () => {
  beforeEach(async () => {
    s = await startStack();
  });

  it("shapes the request and streams progress, content and a final message with timings", async () => {
    const messages = '[{"role":"system","content":"You are Boxmaker."} ,  {"role":"user","content":"caf\\u00e9?"}]';
    const tools =
      '[{"type":"function","function":{"name":"list_dir","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]';
    s.sim.enqueue({ content: ["Hel", "lo", " there"] });
    const r = await collect(s.client, { slot: 2, messagesJson: messages, toolsJson: tools, requestId: "t1" });
    expect(r.error).toBeUndefined();
    expect(r.cases[0]).toBe("progress");
    expect(r.cases.filter((c) => c === "content")).toHaveLength(3);
    expect(r.cases.at(-1)).toBe("final");
    expect(text(r.events, "content")).toBe("Hello there");

    const req = s.sim.completions.at(-1)!;
    expect(req.rawBody).toContain(`"messages":${messages}`);
    expect(req.rawBody).toContain(`"tools":${tools}`);
    expect(req.body).toMatchObject({
      id_slot: 2,
      cache_prompt: true,
      stream: true,
      return_progress: true,
      temperature: 0.6,
      top_p: 0.95,
      top_k: 20,
      min_p: 0,
      max_tokens: s.config.max_tokens,
    });
    expect(req.body).not.toHaveProperty("reasoning_control");

    const f = r.final!;
    expect(JSON.parse(f.messageJson)).toEqual({ role: "assistant", content: "Hello there" });
    expect(f.finishReason).toBe("stop");
    expect(f.completionId).toBe(req.completionId);
    const t = req.timings!;
    expect(f.timings).toMatchObject({
      cacheN: t.cache_n,
      promptN: t.prompt_n,
      promptMs: t.prompt_ms,
      predictedN: t.predicted_n,
      predictedMs: t.predicted_ms,
    });
    // What the server says it streamed is what loopd will store.
    expect(f.content).toBe(req.output!.content);
  });

  it("replaying the final message hits the prompt cache for the whole previous prompt", async () => {
    s.sim.enqueue({ reasoning: "let me think", content: "Answer." });
    const first = await collect(s.client, { slot: 1, messagesJson: userMessages("q1") });
    const held = s.sim.slotTokens(1).length;
    const prev = JSON.parse(userMessages("q1")) as unknown[];
    const next = `[${[...prev.map((m) => JSON.stringify(m)), first.final!.messageJson, '{"role":"user","content":"q2"}'].join(",")}]`;
    s.sim.enqueue({ content: "ok" });
    const second = await collect(s.client, { slot: 1, messagesJson: next });
    expect(second.error).toBeUndefined();
    // Everything the slot held after turn 1 (prompt, thinking and answer) was reused.
    expect(s.sim.completions.at(-1)!.cacheN).toBe(held);
    expect(held).toBeGreaterThan(s.sim.completions.at(-2)!.promptTokens!);
  });

  it("yields the same tool calls whether arguments arrive in 1-character deltas or one delta", async () => {
    const args = '{"path":"/tmp/a \\"b\\".txt","limits":{"start":1,"end":20},"tags":["x","<&>"]}';
    s.sim.enqueue({ toolCalls: [{ id: "call-1", name: "read_file", arguments: args }], argumentChunkSize: 1 });
    s.sim.enqueue({ toolCalls: [{ id: "call-1", name: "read_file", arguments: [args] }] });
    const split = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    const whole = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    expect(split.events.filter((e) => e.event.case === "toolCall").length).toBe(args.length);
    expect(whole.events.filter((e) => e.event.case === "toolCall").length).toBe(1);
    for (const r of [split, whole]) {
      expect(r.final!.finishReason).toBe("tool_calls");
      expect(r.final!.toolCalls.map((c) => ({ ...c, $typeName: undefined }))).toEqual([
        {
          $typeName: undefined,
          index: 0,
          id: "call-1",
          type: "function",
          name: "read_file",
          arguments: args,
          parseError: "",
        },
      ]);
    }
    expect(split.final!.messageJson).toBe(whole.final!.messageJson);
  });

  it("reports invalid tool-call JSON per call without breaking the stream", async () => {
    s.sim.enqueue({
      toolCalls: [
        { name: "a", arguments: '{"x":1}' },
        { name: "b", arguments: '{"x":' },
      ],
    });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    expect(r.error).toBeUndefined();
    expect(r.final!.toolCalls.map((c) => [c.name, c.arguments, c.parseError === ""])).toEqual([
      ["a", '{"x":1}', true],
      ["b", '{"x":', false],
    ]);
  });

  it("caps thinking: the control call names the running completion and the event says accepted", async () => {
    s.sim.enqueue({ reasoning: Array.from({ length: 200 }, (_, i) => `r${i} `), content: "done", tokenDelayMs: 2 });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages(), thinkingCapTokens: 10 });
    expect(r.error).toBeUndefined();
    const req = s.sim.completions.at(-1)!;
    expect(req.body).toMatchObject({ reasoning_control: true });
    expect(s.sim.controlCalls).toHaveLength(1);
    expect(s.sim.controlCalls[0]).toMatchObject({ id: req.completionId, action: "reasoning_end", status: 200 });
    const cap = r.events.find((e) => e.event.case === "thinkingCap")!.event.value as {
      accepted: boolean;
      completionId: string;
      reasoningTokens: number;
    };
    expect(cap.accepted).toBe(true);
    expect(cap.completionId).toBe(req.completionId);
    expect(cap.reasoningTokens).toBeGreaterThanOrEqual(10);
    // Reasoning stopped early and the answer followed.
    expect(r.final!.reasoningTokens).toBeLessThan(200);
    expect(r.final!.content).toBe("done");
    expect(r.cases.indexOf("thinkingCap")).toBeLessThan(r.cases.indexOf("final"));
  });

  it("never interleaves two requests for one slot, and Status shows the holder and the waiter", async () => {
    s.sim.enqueue({ content: Array.from({ length: 20 }, () => "a"), tokenDelayMs: 5 });
    s.sim.enqueue({ content: Array.from({ length: 20 }, () => "b"), tokenDelayMs: 5 });
    const order: string[] = [];
    // The moments that order the two requests: A holds the slot (its first event), B queues for it.
    const aHolds = deferred<void>();
    const bQueued = deferred<void>();
    const locks = s.proxy.locks;
    const acquire = locks.acquire.bind(locks);
    locks.acquire = (slot, holder, signal) => {
      const granted = acquire(slot, holder, signal);
      if (holder === "B") bQueued.resolve();
      return granted;
    };
    const run = async (id: string) => {
      for await (const ev of s.client.complete({ slot: 1, messagesJson: userMessages(id), requestId: id })) {
        order.push(`${id}:${ev.event.case}`);
        if (id === "A") aHolds.resolve();
        if (id === "A" && ev.event.case === "content" && order.filter((o) => o === "A:content").length === 1) {
          // Status while A streams and B waits.
          await bQueued.promise;
          const st = await s.client.status({});
          const slot1 = st.slots.find((x) => x.id === 1)!;
          expect(slot1.heldBy).toBe("A");
          expect(slot1.waiting).toBe(1);
        }
      }
    };
    const a = run("A");
    await aHolds.promise;
    const b = run("B");
    await Promise.all([a, b]);
    const lastA = order.lastIndexOf("A:final");
    const firstB = order.findIndex((o) => o.startsWith("B:"));
    expect(lastA).toBeGreaterThanOrEqual(0);
    expect(firstB).toBeGreaterThan(lastA);
    expect(s.sim.maxConcurrentPerSlot[1]).toBe(1);
  });

  it("cancelling mid-stream aborts upstream promptly and frees the slot", async () => {
    s.sim.enqueue({ content: Array.from({ length: 10_000 }, () => "x"), tokenDelayMs: 5 });
    const ac = new AbortController();
    let n = 0;
    await expect(
      (async () => {
        for await (const ev of s.client.complete(
          { slot: 2, messagesJson: userMessages(), requestId: "c" },
          { signal: ac.signal },
        )) {
          if (ev.event.case === "content" && ++n === 3) ac.abort();
        }
      })(),
    ).rejects.toMatchObject({ status: Status.CANCELLED });
    await s.sim.waitIdle(2);
    expect(s.sim.isProcessing(2)).toBe(false);
    expect(s.sim.completions.at(-1)!.outcome).toBe("aborted");
    // The slot lock is free again: the next request gets it without waiting.
    s.sim.enqueue({ content: "next" });
    const r = await collect(s.client, { slot: 2, messagesJson: userMessages() });
    expect(r.final!.content).toBe("next");
    const st = await s.client.status({});
    expect(st.slots.find((x) => x.id === 2)).toMatchObject({ heldBy: "", waiting: 0 });
  });
});

describe("liveness", () => {
  beforeEach(async () => {
    // 1/10 scale of production: a 5 s window becomes 500 ms, a 2.2 s prefill gap 200 ms.
    s = await startStack({ config: { liveness_timeout_ms: 500 } });
  });

  it("a 16k-token prefill with progress every 200 ms never trips a 500 ms window", async () => {
    const long = "word ".repeat(16_000);
    s.sim.enqueue({ content: "ok", prefillMsPerBatch: 200 });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages(long) });
    expect(r.error).toBeUndefined();
    const progress = r.events.filter((e) => e.event.case === "progress");
    expect(progress.length).toBeGreaterThanOrEqual(8);
    const last = progress.at(-1)!.event.value as { processed: number; total: number };
    expect(last.processed).toBe(last.total);
    expect(last.total).toBeGreaterThan(16_000);
    expect(r.final!.content).toBe("ok");
  });

  it("a 1,000 ms silent stall ends the call with DEADLINE_EXCEEDED after a partial with what arrived", async () => {
    s.sim.enqueue({ content: ["one", " two", " three"], silenceMs: 1000, silenceAfterTokens: 2 });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    expect(r.error?.status).toBe(Status.DEADLINE_EXCEEDED);
    expect(r.error!.details).toMatchObject({ livenessTimeoutMs: 500 });
    expect(r.cases.at(-1)).toBe("partial");
    expect(r.partial!.content).toBe("one two");
    expect(r.partial!.finishReason).toBe("aborted");
    expect(JSON.parse(r.partial!.messageJson)).toEqual({ role: "assistant", content: "one two" });
    await s.sim.waitIdle(0);
    expect(s.sim.completions.at(-1)!.outcome).toBe("aborted");
  });

  it("a slot that keeps decoding while the stream is quiet for 4 windows is not killed", async () => {
    // The real server's parser holds output back: no chunk, but /slots shows n_decoded rising.
    s.sim.enqueue({ content: ["one", " two", " three"], quietMs: 2000, quietAfterTokens: 1 });
    const r = await collect(s.client, { slot: 1, messagesJson: userMessages() });
    expect(r.error).toBeUndefined();
    expect(r.final!.content).toBe("one two three");
    const slotsProbes = s.sim.requests.filter((q) => q.path === "/slots");
    expect(slotsProbes.length).toBeGreaterThanOrEqual(2);
  });

  it("a hung slot (processing, n_decoded standing still) is still killed, naming why", async () => {
    s.sim.enqueue({ content: ["one", " two"], silenceMs: 3000, silenceAfterTokens: 1 });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    expect(r.error?.status).toBe(Status.DEADLINE_EXCEEDED);
    expect(r.error!.details.livenessReason).toMatch(/decoded nothing/);
    expect(r.partial!.content).toBe("one");
  });

  it("the thinking-cap event arrives as soon as reasoning_end succeeds, even while the stream is quiet", async () => {
    s.sim.enqueue({
      reasoning: Array.from({ length: 50 }, () => "hm "),
      content: "done",
      quietMs: 1500,
      quietAfterTokens: 3,
    });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages(), thinkingCapTokens: 3 });
    expect(r.error).toBeUndefined();
    const cap = r.cases.indexOf("thinkingCap");
    expect(cap).toBeGreaterThan(0);
    // Before the first chunk that followed the quiet spell, not with it.
    expect(cap).toBeLessThan(r.cases.indexOf("content"));
    expect(r.final!.content).toBe("done");
  });

  it("a silent prefill (no progress events) trips the window too", async () => {
    s.sim.enqueue({ content: "late", silenceMs: 1000, silenceAfterTokens: 0 });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    expect(r.error?.status).toBe(Status.DEADLINE_EXCEEDED);
    expect(r.partial!.content).toBe("");
  });
});
