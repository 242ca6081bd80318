import { describe, expect, it } from "vitest";
import { ErrorReason, RpcError, Status, createLogger } from "@boxmaker/common";
import { CompletionRun, type RunDeps } from "../src/completion/completion-run.js";
import type { CompletionEventInit } from "../src/completion/completion-stream.js";
import { LivenessTimeout, ServerCheckError, ThinkingCapRefused, UpstreamConnectError } from "../src/errors.js";
import type { StreamResponse } from "../src/upstream/llama-client.js";
import type { ControlOutcome } from "../src/completion/thinking-cap.js";
import { FakeBody, chunk, deferred, streamResponse } from "./support/fake-stream.js";

/** A CompletionRun wired to fakes: no socket, no server; the test writes the response body. */
function harness(
  o: {
    cap?: number;
    windowMs?: number;
    send?: (signal: AbortSignal) => Promise<StreamResponse>;
    probe?: RunDeps["probeSlot"];
    endReasoning?: (id: string) => Promise<ControlOutcome>;
  } = {},
) {
  const body = new FakeBody();
  const seen = { markDown: 0, recheck: 0, controlIds: [] as string[], upstream: undefined as AbortSignal | undefined };
  const caller = new AbortController();
  const deps: RunDeps = {
    send: (_b, signal) => {
      seen.upstream = signal;
      if (o.send) return o.send(signal);
      body.abortOn(signal);
      return Promise.resolve(streamResponse(body));
    },
    probeSlot: o.probe ?? (() => Promise.resolve(undefined)),
    endReasoning: (id) => {
      seen.controlIds.push(id);
      return o.endReasoning?.(id) ?? Promise.resolve({ accepted: true, message: "" });
    },
    markDown: () => seen.markDown++,
    recheck: () => seen.recheck++,
    servedModel: () => "served.gguf",
    log: createLogger("completion-run-test", "silent"),
  };
  const run = new CompletionRun(
    {
      body: Buffer.from("{}"),
      thinkingCapTokens: o.cap ?? 0,
      livenessWindowMs: o.windowMs ?? 60_000,
      errCtx: { upstream: "unix:/llama.sock", what: "completion", slot: 1, retryAfterMs: 2000 },
      signal: caller.signal,
    },
    deps,
  );
  return { run, body, seen, caller };
}

async function drain(events: AsyncIterable<CompletionEventInit>) {
  const got: CompletionEventInit[] = [];
  let error: RpcError | undefined;
  try {
    for await (const ev of events) got.push(ev);
  } catch (e) {
    if (!(e instanceof RpcError)) throw e;
    error = e;
  }
  const value = <T>(c: string) => got.find((e) => e.event?.case === c)?.event?.value as T;
  return {
    cases: got.map((e) => e.event?.case),
    error,
    final: value<{ content: string; finishReason: string }>("final"),
    partial: value<{ content: string; finishReason: string; completionId: string }>("partial"),
    cap: value<{ accepted: boolean; message: string; reasoningTokens: number; completionId: string }>("thinkingCap"),
  };
}

const content = (text: string) => chunk({ content: text });

describe("CompletionRun: one request from send to final", () => {
  it("relays the chunks and ends with the final message; the connection is left to the pool", async () => {
    const h = harness();
    h.body
      .event(chunk({ role: "assistant", content: null }))
      .event(content("Hel"))
      .event(content("lo"));
    h.body.event(chunk({}, "stop")).event("[DONE]").end();
    const r = await drain(h.run.events());
    expect(r.error).toBeUndefined();
    expect(r.cases).toEqual(["content", "content", "final"]);
    expect(r.final).toMatchObject({ content: "Hello", finishReason: "stop" });
    expect(h.seen.upstream?.aborted).toBe(false);
  });

  it("a stream dropped mid-way: a partial with what arrived, then UNAVAILABLE, and the server is marked down", async () => {
    const h = harness();
    h.body.event(content("last words"));
    h.body.fail(Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" }));
    const r = await drain(h.run.events());
    expect(r.cases).toEqual(["content", "partial"]);
    expect(r.partial).toMatchObject({ content: "last words", finishReason: "aborted", completionId: "chatcmpl-t" });
    expect(r.error?.status).toBe(Status.UNAVAILABLE);
    expect(r.error?.message).toMatch(/dropped the stream mid-completion: other side closed/);
    expect(h.seen.markDown).toBe(1);
  });

  it("a stream that ends without a finish_reason: a partial, then INTERNAL", async () => {
    const h = harness();
    h.body.event(content("cut")).end();
    const r = await drain(h.run.events());
    expect(r.cases).toEqual(["content", "partial"]);
    expect(r.error?.status).toBe(Status.INTERNAL);
    expect(r.error?.message).toMatch(/without a finish_reason/);
    expect(h.seen.markDown).toBe(0);
  });

  it("an error object inside the stream: a partial, then ABORTED with the server's words", async () => {
    const h = harness();
    h.body
      .event(content("so far"))
      .event({ error: { code: 500, message: "Failed to parse input", type: "server_error" } });
    const r = await drain(h.run.events());
    expect(r.cases).toEqual(["content", "partial"]);
    expect(r.error?.status).toBe(Status.ABORTED);
    expect(r.error?.message).toMatch(/Failed to parse input/);
  });

  it("a non-200 answer: its mapped status and nothing partial; a 503 asks for a health check now", async () => {
    const errBody = new FakeBody().raw('{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}');
    errBody.end();
    const h = harness({ send: () => Promise.resolve(streamResponse(errBody, 503)) });
    const r = await drain(h.run.events());
    expect(r.cases).toEqual([]);
    expect(r.error?.status).toBe(Status.UNAVAILABLE);
    expect(r.error?.details.retryAfterMs).toBe(2000);
    expect(h.seen.recheck).toBe(1);
  });

  it("a server that cannot be reached: UNAVAILABLE naming the errno, and the server is marked down", async () => {
    const refused = Object.assign(new Error("connect ENOENT /llama.sock"), { code: "ENOENT" });
    const h = harness({ send: () => Promise.reject(new UpstreamConnectError("unix:/llama.sock", refused)) });
    const r = await drain(h.run.events());
    expect(r.cases).toEqual([]);
    expect(r.error?.status).toBe(Status.UNAVAILABLE);
    expect(r.error?.details.errno).toBe("ENOENT");
    expect(h.seen.markDown).toBe(1);
  });

  it("a connection refused by the contract check: FAILED_PRECONDITION naming the model served", async () => {
    const h = harness({ send: () => Promise.reject(new ServerCheckError("mismatch", "not the contract's server")) });
    const r = await drain(h.run.events());
    expect(r.error?.status).toBe(Status.FAILED_PRECONDITION);
    expect(r.error?.details).toMatchObject({ reason: ErrorReason.SELF_TEST_FAILED, model: "served.gguf" });
    expect(h.seen.markDown).toBe(0);
  });

  it("cancelled by the caller: what was streamed as a partial with counted timings, then CANCELLED; upstream aborted", async () => {
    const h = harness();
    h.body
      .event({
        ...(chunk({ role: "assistant", content: null }) as object),
        prompt_progress: { total: 50, cache: 40, processed: 50, time_ms: 7 },
      })
      .event(chunk({ reasoning_content: "hm" }))
      .event(content("a"))
      .event(content("b"));
    const events = h.run.events();
    for (let i = 0; i < 4; i++) await events.next();
    h.caller.abort();
    const r = await drain(events);
    expect(r.cases).toEqual(["partial"]);
    expect(r.partial).toMatchObject({
      content: "ab",
      finishReason: "cancelled",
      messageJson: '{"role":"assistant","content":"ab","reasoning_content":"hm"}',
      // The server sends no timings for a stopped generation: one token per chunk with output.
      timings: { cacheN: 40, promptN: 10, promptMs: 7, predictedN: 3, predictedMs: 0 },
    });
    expect(r.error?.status).toBe(Status.CANCELLED);
    expect(h.seen.upstream?.aborted).toBe(true);
  });

  it("cancelled before the response began: CANCELLED, nothing partial", async () => {
    const h = harness({
      send: (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
    });
    const events = h.run.events();
    const next = events.next();
    h.caller.abort();
    await expect(next).rejects.toMatchObject({ status: Status.CANCELLED });
  });
});

describe("CompletionRun: the thinking cap", () => {
  const reasoning = (text: string) => chunk({ reasoning_content: text });

  it("the thinkingCap event goes out as soon as reasoning_end answers, while the stream is still silent", async () => {
    const control = deferred<ControlOutcome>();
    const h = harness({ cap: 2, endReasoning: () => control.promise });
    h.body.event(reasoning("a")).event(reasoning("b"));
    const events = h.run.events();
    expect((await events.next()).value).toMatchObject({ event: { case: "reasoning" } });
    expect((await events.next()).value).toMatchObject({ event: { case: "reasoning" } });
    const third = events.next();
    await h.body.drained(); // the run reads on: the cap was counted and the stream has nothing more
    expect(h.seen.controlIds).toEqual(["chatcmpl-t"]);
    control.resolve({ accepted: true, message: "" });
    expect((await third).value).toEqual({
      event: {
        case: "thinkingCap",
        value: { reasoningTokens: 2, completionId: "chatcmpl-t", accepted: true, message: "" },
      },
    });
    h.body.event(content("answer")).event(chunk({}, "stop")).end();
    const rest = await drain(events);
    expect(rest.cases).toEqual(["content", "final"]);
  });

  it("a completion that finishes before reasoning_end answers still reports the answer, before the final", async () => {
    const control = deferred<ControlOutcome>();
    const h = harness({ cap: 1, endReasoning: () => control.promise });
    h.body.event(reasoning("a")).event(chunk({}, "stop"));
    const events = h.run.events();
    expect((await events.next()).value).toMatchObject({ event: { case: "reasoning" } });
    const next = events.next();
    await h.body.drained(); // the finish_reason is in; only the control answer is outstanding
    h.body.end();
    let answered = false;
    void next.then(() => (answered = true));
    // No timer: setImmediate runs after every pending promise job, so a run that did not wait
    // for the control answer would have produced its final event by then.
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false);
    control.resolve({ accepted: true, message: "" });
    expect((await next).value).toMatchObject({ event: { case: "thinkingCap" } });
    expect((await drain(events)).cases).toEqual(["final"]);
  });

  it("a refused reasoning_end aborts the completion: the thinkingCap event, a partial, then ABORTED", async () => {
    const h = harness({
      cap: 1,
      endReasoning: () => Promise.resolve({ accepted: false, message: "no active completion for this id" }),
    });
    h.body.event(reasoning("a"));
    const r = await drain(h.run.events());
    expect(r.cases).toEqual(["reasoning", "thinkingCap", "partial"]);
    expect(r.cap).toMatchObject({ accepted: false, message: "no active completion for this id", reasoningTokens: 1 });
    expect(r.error?.status).toBe(Status.ABORTED);
    expect(r.error?.details.reason).toBe(ErrorReason.THINKING_CAP_REFUSED);
    expect(h.seen.upstream?.reason).toBeInstanceOf(ThinkingCapRefused);
  });
});

describe("CompletionRun: liveness", () => {
  it("a server silent before answering, whose slot shows no work, is cut: a partial, then DEADLINE_EXCEEDED", async () => {
    const h = harness({
      windowMs: 40,
      probe: () => Promise.resolve({ processing: false, decoded: -1, promptProcessed: -1, task: -1 }),
      // Headers never come; only the run's own abort ends the wait.
      send: (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
    });
    const r = await drain(h.run.events());
    expect(r.cases).toEqual(["partial"]);
    expect(r.error?.status).toBe(Status.DEADLINE_EXCEEDED);
    expect(r.error?.details).toMatchObject({ livenessTimeoutMs: 40, slot: 1 });
    expect(r.error?.details.livenessReason).toMatch(/not processing/);
    expect(h.seen.upstream?.reason).toBeInstanceOf(LivenessTimeout);
  });
});
