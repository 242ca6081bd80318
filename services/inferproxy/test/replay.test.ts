import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { Status } from "@boxmaker/common";
import { collect, startProxy, userMessages, type RunningProxy } from "./support/stack.js";
import { FakeUpstream, send } from "./support/fake-upstream.js";
import { recordedEvents, recording } from "./support/recordings.js";
import { templateSha256 } from "../src/server-check/self-test.js";
import { tempDir } from "../../../test/support/tmp.js";

// A fake llama-server that answers with the recorded bytes, and inferproxy in front of it over real sockets.
let fake: FakeUpstream;
let p: RunningProxy;
let tmp: ReturnType<typeof tempDir>;
beforeAll(async () => {
  tmp = tempDir("bxrp-");
  fake = await new FakeUpstream(join(tmp.dir, "llama.sock")).start();
  const props = JSON.parse(recording("props").response.body);
  p = await startProxy(tmp.dir, {
    upstream: { socket_path: fake.socketPath },
    contract: { template_sha256: templateSha256(props.chat_template), n_ctx_per_slot: 32768, total_slots: 3 },
  });
});
afterAll(async () => {
  await p.close();
  await fake.close();
  tmp.cleanup();
});

function recorded(name: string) {
  let content = "";
  let reasoning = "";
  let finish = "";
  let timings: Record<string, number> | undefined;
  const args = new Map<number, string>();
  for (const c of recordedEvents(recording(name)) as Array<Record<string, any>>) {
    const d = c.choices?.[0]?.delta ?? {};
    if (typeof d.content === "string") content += d.content;
    if (typeof d.reasoning_content === "string") reasoning += d.reasoning_content;
    for (const t of d.tool_calls ?? []) args.set(t.index, (args.get(t.index) ?? "") + (t.function?.arguments ?? ""));
    if (c.choices?.[0]?.finish_reason) finish = c.choices[0].finish_reason;
    if (c.timings) timings = c.timings;
  }
  return { content, reasoning, finish, timings, args };
}

describe("recorded streams replayed through inferproxy", () => {
  it.each([
    "chat-stream-answer",
    "chat-stream-tool-call-xml",
    "cache-1-first",
    "cache-2-after-tool-result",
    "prefill-progress-16k",
    "reasoning-stream-no-control",
  ])("%s → the recorded message and timings", async (name) => {
    fake.once("POST /v1/chat/completions", (_q, res) => send(res, recording(name)));
    const r = await collect(p.client, { slot: 0, messagesJson: userMessages() });
    expect(r.error).toBeUndefined();
    const want = recorded(name);
    const f = r.final!;
    expect(f.content).toBe(want.content);
    expect(f.reasoningContent).toBe(want.reasoning);
    expect(f.finishReason).toBe(want.finish);
    expect(f.timings).toMatchObject({
      cacheN: want.timings!.cache_n,
      promptN: want.timings!.prompt_n,
      promptMs: want.timings!.prompt_ms,
      predictedN: want.timings!.predicted_n,
      predictedMs: want.timings!.predicted_ms,
    });
    expect(f.toolCalls.map((t) => t.arguments)).toEqual([...want.args.values()]);
    const msg = JSON.parse(f.messageJson);
    expect(msg.content).toBe(want.content);
  });

  it("error-parse-in-stream → partial, then ABORTED with the server's message", async () => {
    fake.once("POST /v1/chat/completions", (_q, res) => send(res, recording("error-parse-in-stream")));
    const r = await collect(p.client, { slot: 0, messagesJson: userMessages() });
    expect(r.cases).toEqual(["progress", "progress", "partial"]);
    expect(r.error?.status).toBe(Status.ABORTED);
    expect(r.error!.message).toContain("does not match the expected peg-native format");
  });

  it("error-context-overflow-stream → FAILED_PRECONDITION with the recorded sizes", async () => {
    fake.once("POST /v1/chat/completions", (_q, res) => send(res, recording("error-context-overflow-stream")));
    const r = await collect(p.client, { slot: 0, messagesJson: userMessages() });
    expect(r.events).toHaveLength(0);
    expect(r.error?.status).toBe(Status.FAILED_PRECONDITION);
    expect(r.error!.details).toMatchObject({ nPromptTokens: 13922, nCtx: 1024 });
  });

  it("reasoning-stream-with-control: the cap fires a control call with the recorded completion id", async () => {
    fake.once("POST /v1/chat/completions", (_q, res) => send(res, recording("reasoning-stream-with-control"), 2));
    fake.once("POST /v1/chat/completions/control", (_q, res) => send(res, recording("reasoning-control-response")));
    const r = await collect(p.client, { slot: 0, messagesJson: userMessages(), thinkingCapTokens: 20 });
    const control = fake.requests.filter((q) => q.path === "/v1/chat/completions/control").at(-1)!;
    expect(JSON.parse(control.body)).toEqual(recording("reasoning-control-response").request.body);
    const cap = r.events.find((e) => e.event.case === "thinkingCap")!.event.value as {
      accepted: boolean;
      reasoningTokens: number;
    };
    expect(cap).toMatchObject({ accepted: true, reasoningTokens: 20 });
    // The recording ends with the server's parser error: surfaced as such, with everything kept.
    expect(r.error?.status).toBe(Status.ABORTED);
    expect(r.partial!.reasoningContent).toBe(recorded("reasoning-stream-with-control").reasoning);
    expect(
      fake.requests.find((q) => q.path === "/v1/chat/completions" && q.body.includes('"reasoning_control":true')),
    ).toBeDefined();
  });

  it("a refused reasoning_end aborts the completion: thinking_cap accepted=false, partial, ABORTED", async () => {
    let closed!: Promise<void>;
    fake.once("POST /v1/chat/completions", async (_q, res) => {
      closed = new Promise((r) => res.on("close", () => r()));
      await send(res, recording("reasoning-stream-no-control"), 20);
    });
    fake.once("POST /v1/chat/completions/control", (_q, res) => send(res, recording("error-control-unknown-id")));
    const r = await collect(p.client, { slot: 0, messagesJson: userMessages(), thinkingCapTokens: 3 });
    expect(r.cases.slice(-2)).toEqual(["thinkingCap", "partial"]);
    const cap = r.events.at(-2)!.event.value as { accepted: boolean; message: string; completionId: string };
    expect(cap).toMatchObject({
      accepted: false,
      message: "no active completion for this id",
      completionId: "chatcmpl-IBRUdwzkkZzJpXVeeCTIu9W6CPULEX1n",
    });
    expect(r.error?.status).toBe(Status.ABORTED);
    expect(r.error!.message).toMatch(/refused to end reasoning/);
    expect(r.cases).not.toContain("final");
    // The aborted completion's connection is closed, not left streaming (the test times out otherwise).
    await closed;
  });
});
