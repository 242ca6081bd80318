import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import {
  ErrorDetailsSchema,
  ErrorReason,
  RpcError,
  Status,
  invalidArgument,
  type ErrorDetailsInit,
} from "@boxmaker/common";
import {
  LivenessTimeout,
  ServerCheckError,
  StreamErrorObject,
  StreamProtocolError,
  ThinkingCapRefused,
  UpstreamConnectError,
  UpstreamTimeoutError,
} from "../src/errors.js";
import { mapRequestFailure, mapRunFailure } from "../src/failure-mapping.js";

const ctx = { upstream: "unix:/llama.sock", what: "completion", slot: 2, retryAfterMs: 2000 };
const runCtx = { ...ctx, livenessWindowMs: 5000, completionId: "chatcmpl-x" };
const details = (d: ErrorDetailsInit) => create(ErrorDetailsSchema, d);
const socketError = (code: string) => Object.assign(new Error(`${code} on the socket`), { code });

describe("mapRequestFailure: a request that got no answer", () => {
  it("never connected → UNAVAILABLE with the errno and retry advice; the server is down", () => {
    const f = mapRequestFailure(new UpstreamConnectError(ctx.upstream, socketError("ECONNREFUSED")), ctx, "m.gguf");
    expect(f?.serverDown).toBe(true);
    expect(f?.error.status).toBe(Status.UNAVAILABLE);
    expect(f?.error.details).toMatchObject({ errno: "ECONNREFUSED", retryAfterMs: 2000 });
    expect(f?.error.message).toMatch(/nothing accepts connections/);
    expect(f?.error.cause).toMatchObject({ code: "ECONNREFUSED" });
  });

  it("refused by the contract check: a mismatch is FAILED_PRECONDITION naming the model, the rest UNAVAILABLE", () => {
    const mismatch = mapRequestFailure(new ServerCheckError("mismatch", "does not match"), ctx, "other.gguf");
    expect(mismatch?.serverDown).toBe(false);
    expect(mismatch?.error.status).toBe(Status.FAILED_PRECONDITION);
    expect(mismatch?.error.message).toBe("does not match");
    expect(mismatch?.error.details).toEqual(
      details({ upstream: ctx.upstream, reason: ErrorReason.SELF_TEST_FAILED, model: "other.gguf" }),
    );
    for (const [kind, reason] of [
      ["loading", ErrorReason.SERVER_LOADING],
      ["unverified", ErrorReason.SERVER_UNVERIFIED],
    ] as const) {
      const f = mapRequestFailure(new ServerCheckError(kind, "not now"), ctx, "");
      expect(f?.error.status).toBe(Status.UNAVAILABLE);
      expect(f?.error.details).toEqual(details({ upstream: ctx.upstream, reason, retryAfterMs: 2000 }));
    }
  });

  it("over its time limit → DEADLINE_EXCEEDED saying what was being done", () => {
    const f = mapRequestFailure(
      new UpstreamTimeoutError("GET /x took longer than 5 ms"),
      { ...ctx, what: "slot save" },
      "",
    );
    expect(f?.error.status).toBe(Status.DEADLINE_EXCEEDED);
    expect(f?.error.message).toBe("slot save: GET /x took longer than 5 ms");
    expect(f?.serverDown).toBe(false);
  });

  it("anything else is not a request failure", () => {
    expect(mapRequestFailure(new Error("x"), ctx, "")).toBeUndefined();
    expect(mapRequestFailure(invalidArgument("y"), ctx, "")).toBeUndefined();
  });
});

describe("mapRunFailure: why a completion failed", () => {
  it("inferproxy's own abort is the story, whatever the aborted request threw", () => {
    const thrown = new Error("This operation was aborted");
    const live = mapRunFailure(thrown, new LivenessTimeout(5123.4, "the slot is not processing any task"), runCtx);
    expect(live.cutBy).toBe("liveness");
    expect(live.serverDown).toBe(false);
    expect(live.error.status).toBe(Status.DEADLINE_EXCEEDED);
    expect(live.error.message).toMatch(/sent nothing for 5123 ms \(liveness window 5000 ms\) and the slot is not/);
    expect(live.error.details).toEqual(
      details({
        upstream: ctx.upstream,
        slot: 2,
        livenessTimeoutMs: 5000,
        silentMs: 5123,
        livenessReason: "the slot is not processing any task",
        completionId: "chatcmpl-x",
      }),
    );
    const cap = mapRunFailure(thrown, new ThinkingCapRefused("no active completion"), runCtx);
    expect(cap.cutBy).toBe("thinking_cap");
    expect(cap.error.status).toBe(Status.ABORTED);
    expect(cap.error.message).toMatch(/refused to end reasoning \(no active completion\)/);
    expect(cap.error.details).toMatchObject({ reason: ErrorReason.THINKING_CAP_REFUSED, completionId: "chatcmpl-x" });
  });

  it("an RpcError already mapped (before the stream began) passes through", () => {
    const e = new RpcError(Status.RESOURCE_EXHAUSTED, "busy");
    expect(mapRunFailure(e, undefined, runCtx)).toEqual({ error: e, serverDown: false, cutBy: undefined });
  });

  it("what the stream said: an error object is mapped from its body, nonsense is INTERNAL", () => {
    const obj = mapRunFailure(new StreamErrorObject({ code: 500, message: "parse failed" }), undefined, runCtx);
    expect(obj.error.status).toBe(Status.ABORTED);
    expect(obj.error.message).toMatch(/aborted the completion: parse failed/);
    const overflow = new StreamErrorObject({ type: "exceed_context_size_error", n_prompt_tokens: 9, n_ctx: 4 });
    expect(mapRunFailure(overflow, undefined, runCtx).error.details.reason).toBe(ErrorReason.CONTEXT_OVERFLOW);
    const proto = mapRunFailure(new StreamProtocolError("not JSON"), undefined, runCtx);
    expect(proto.error.status).toBe(Status.INTERNAL);
    expect(proto.error.details).toEqual(details({ upstream: ctx.upstream }));
    expect(proto.serverDown).toBe(false);
  });

  it("anything else is the server dropping the stream: UNAVAILABLE, and the server is down", () => {
    const f = mapRunFailure(socketError("UND_ERR_SOCKET"), undefined, runCtx);
    expect(f.serverDown).toBe(true);
    expect(f.cutBy).toBeUndefined();
    expect(f.error.status).toBe(Status.UNAVAILABLE);
    expect(f.error.message).toBe(
      "llama-server at unix:/llama.sock dropped the stream mid-completion: UND_ERR_SOCKET on the socket",
    );
    expect(f.error.details).toEqual(details({ upstream: ctx.upstream, retryAfterMs: 2000 }));
  });

  it("keeps what it wraps as the cause", () => {
    const dropped = socketError("UND_ERR_SOCKET");
    expect(mapRunFailure(dropped, undefined, runCtx).error.cause).toBe(dropped);
    const live = new LivenessTimeout(1, "x");
    expect(mapRunFailure(new Error("aborted"), live, runCtx).error.cause).toBe(live);
    const check = new ServerCheckError("mismatch", "m");
    expect(mapRequestFailure(check, ctx, "")?.error.cause).toBe(check);
  });
});
