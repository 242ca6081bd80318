import { describe, expect, it } from "vitest";
import { CompletionAssembler, type CompletionEventInit } from "../src/completion/completion-stream.js";
import { StreamErrorObject } from "../src/errors.js";
import { SseParser } from "../src/completion/sse-parser.js";
import { recordedEvents, recording, type Recording } from "./support/recordings.js";

function replay(r: Recording) {
  const asm = new CompletionAssembler();
  const p = new SseParser();
  const events: CompletionEventInit[] = [];
  let error: unknown;
  try {
    for (const d of [...p.pushText(r.response.body), ...p.end()]) events.push(...asm.onData(d).events);
  } catch (e) {
    error = e;
  }
  return { asm, events, error };
}

/** The message and timings the recording shows, computed straight from its chunks. */
function expected(r: Recording) {
  let content = "";
  let reasoning = "";
  let finish = "";
  let timings: Record<string, number> | undefined;
  for (const c of recordedEvents(r) as Array<Record<string, any>>) {
    const d = c.choices?.[0]?.delta ?? {};
    if (typeof d.content === "string") content += d.content;
    if (typeof d.reasoning_content === "string") reasoning += d.reasoning_content;
    if (c.choices?.[0]?.finish_reason) finish = c.choices[0].finish_reason;
    if (c.timings) timings = c.timings;
  }
  return { content, reasoning, finish, timings };
}

describe("replaying recorded streams through the assembler", () => {
  it.each([
    "chat-stream-answer",
    "cache-1-first",
    "cache-3-next-user-turn",
    "prefill-progress-16k",
    "reasoning-stream-no-control",
    "error-tool-choice-unknown-name",
  ])("%s: final message and timings as recorded", (name) => {
    const r = recording(name);
    const { asm, events, error } = replay(r);
    expect(error).toBeUndefined();
    const want = expected(r);
    const fin = asm.message();
    expect(fin.content).toBe(want.content);
    expect(fin.reasoningContent).toBe(want.reasoning);
    expect(fin.finishReason).toBe(want.finish);
    expect(fin.timings).toEqual({
      cacheN: want.timings!.cache_n,
      promptN: want.timings!.prompt_n,
      promptMs: want.timings!.prompt_ms,
      predictedN: want.timings!.predicted_n,
      predictedMs: want.timings!.predicted_ms,
    });
    expect(fin.completionId).toMatch(/^chatcmpl-/);
    const msg = JSON.parse(fin.messageJson!);
    expect(msg).toEqual({
      role: "assistant",
      content: want.content,
      ...(want.reasoning ? { reasoning_content: want.reasoning } : {}),
    });
    const progress = events.filter((e) => e.event?.case === "progress");
    expect(progress.length).toBe((recordedEvents(r) as any[]).filter((c) => c.prompt_progress).length);
  });

  it("chat-stream-answer: exact event sequence", () => {
    const { events, asm } = replay(recording("chat-stream-answer"));
    expect(
      events.map((e) => [e.event?.case, (e.event?.value as any)?.text ?? (e.event?.value as any)?.processed]),
    ).toEqual([
      ["progress", 0],
      ["progress", 35],
      ["content", "Done"],
      ["content", "."],
    ]);
    expect(asm.message().messageJson).toBe('{"role":"assistant","content":"Done."}');
  });

  it("prefill-progress-16k: progress totals as recorded", () => {
    const { events } = replay(recording("prefill-progress-16k"));
    const p = events.filter((e) => e.event?.case === "progress").map((e) => e.event!.value as any);
    expect(p.length).toBe(13);
    expect(p[0]).toEqual({ total: 22722, cache: 0, processed: 0, timeMs: 0 });
    expect(p.at(-1)!.processed).toBe(22722);
  });

  it("cache-2: the continued assistant message is exactly what the next request (cache-3) echoes", () => {
    const { asm } = replay(recording("cache-2-after-tool-result"));
    const next = (recording("cache-3-next-user-turn").request.body as any).messages[3];
    expect(JSON.parse(asm.message().messageJson!)).toEqual(next);
  });

  it("chat-stream-tool-call-xml: a partial call cut off by length keeps its raw arguments", () => {
    const r = recording("chat-stream-tool-call-xml");
    const { asm, events } = replay(r);
    const raw = (recordedEvents(r) as any[])
      .flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? [])
      .map((t: any) => t.function?.arguments ?? "")
      .join("");
    const fin = asm.message();
    expect(fin.finishReason).toBe("length");
    expect(fin.toolCalls).toEqual([
      {
        index: 0,
        id: "AJQzlKPtpNvF1ANJnUIAPo0dVGuVR81m",
        type: "function",
        name: "find_tool",
        arguments: raw,
        parseError: expect.stringMatching(/cut off/),
      },
    ]);
    expect(JSON.parse(fin.messageJson!)).toEqual({
      role: "assistant",
      content: "",
      tool_calls: [
        { id: "AJQzlKPtpNvF1ANJnUIAPo0dVGuVR81m", type: "function", function: { name: "find_tool", arguments: raw } },
      ],
    });
    const tc = events.filter((e) => e.event?.case === "toolCall").map((e) => e.event!.value as any);
    expect(tc[0]).toMatchObject({
      index: 0,
      id: "AJQzlKPtpNvF1ANJnUIAPo0dVGuVR81m",
      name: "find_tool",
      argumentsDelta: "{",
    });
    expect(tc.slice(1).every((t) => t.id === "" && t.name === "")).toBe(true);
  });

  it("error objects inside the stream surface as errors, keeping what came before", () => {
    const a = replay(recording("error-parse-in-stream"));
    expect(a.error).toBeInstanceOf(StreamErrorObject);
    expect((a.error as StreamErrorObject).body.code).toBe(500);
    const b = replay(recording("reasoning-stream-with-control"));
    expect(b.error).toBeInstanceOf(StreamErrorObject);
    const partial = b.asm.message("aborted");
    const want = expected(recording("reasoning-stream-with-control"));
    // 20 deltas before the control call plus the ones already in flight when it landed.
    expect(partial.reasoningTokens).toBe(22);
    expect(partial.reasoningContent).toBe(want.reasoning);
    expect(partial.content).toBe(want.content);
    expect(partial.content!.length).toBeGreaterThan(0);
    expect(partial.finishReason).toBe("aborted");
  });

  it("serialises the message deterministically, with keys only when the server produced them", () => {
    const asm = new CompletionAssembler();
    asm.onChunk({ choices: [{ delta: { reasoning_content: "hm" } }] });
    asm.onChunk({
      choices: [
        {
          delta: {
            tool_calls: [{ index: 0, id: "i", type: "function", function: { name: "f", arguments: '{"b":1, "a":2}' } }],
          },
        },
      ],
    });
    asm.onChunk({ choices: [{ finish_reason: "tool_calls", delta: {} }] });
    expect(asm.message().messageJson).toBe(
      '{"role":"assistant","content":"","reasoning_content":"hm","tool_calls":[{"id":"i","type":"function","function":{"name":"f","arguments":"{\\"b\\":1, \\"a\\":2}"}}]}',
    );
  });
});
