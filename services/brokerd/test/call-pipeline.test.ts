import { ToolDecision } from "@boxmaker/common";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CallPipeline } from "../src/call-pipeline.js";
import type { ToolDef } from "../src/tool-table.js";
import { fakeDeps, fakeTool } from "./fakes.js";

let cleanup: (() => void) | undefined;
afterEach(() => {
  cleanup?.();
  cleanup = undefined;
  vi.restoreAllMocks();
});

function pipeline(tools: ToolDef[], config: Record<string, unknown> = {}) {
  const f = fakeDeps(tools, config);
  cleanup = f.cleanup;
  let n = 0;
  const p = new CallPipeline(f.deps);
  const call = (name: string, args: unknown, session = "s1") =>
    p.call(
      {
        sessionId: session,
        callId: `c${++n}`,
        name,
        argumentsJson: typeof args === "string" ? args : JSON.stringify(args),
      },
      new AbortController().signal,
    );
  return { ...f, call };
}

describe("the call pipeline, without sockets", () => {
  it("refuses oversized and non-JSON arguments before looking at the tool", async () => {
    const look = fakeTool("look", "read");
    const { call, audit } = pipeline([look], { limits: { max_argument_bytes: 64 } });
    expect(await call("look", { path: "x".repeat(100) })).toMatchObject({
      decision: ToolDecision.DENIED,
      rule: "limit:argument-size",
      isError: true,
    });
    expect(await call("look", "{not json")).toMatchObject({
      decision: ToolDecision.DENIED,
      rule: "arguments:not-json",
    });
    expect(look.planned).toEqual([]);
    expect(audit.map((a) => a.decision)).toEqual(["denied", "denied"]);
  });

  it("maps each policy effect to its decision: allow runs, ask stages, deny refuses", async () => {
    const look = fakeTool("look", "read");
    const put = fakeTool("put", "write");
    const zap = fakeTool("zap", "exec");
    const { call, deps } = pipeline([look, put, zap], {
      policy: { rules: [{ tool: "zap", effect: "deny", name: "no-zap" }] },
    });
    expect(await call("look", { path: "a" })).toMatchObject({
      decision: ToolDecision.ALLOWED,
      content: "look ran",
      rule: "default:read",
    });
    const staged = await call("put", { path: "a" });
    expect(staged).toMatchObject({ decision: ToolDecision.STAGED, rule: "default:write", isError: false });
    expect(deps.proposals.get(staged.proposalId)).toMatchObject({ tool: "put", arguments_json: '{"path":"a"}' });
    const no = await call("zap", {});
    expect(no).toMatchObject({ decision: ToolDecision.DENIED, rule: "no-zap", isError: true });
    expect(no.content).toMatch(/^Denied by policy \(no-zap\): zap is not allowed\. Do not retry it/);
    expect([look.executed, put.executed, zap.executed]).toEqual([1, 0, 0]);
  });

  it("names undeclared tools and points at find_tool", async () => {
    const hidden = fakeTool("hidden", "read", false);
    const { call } = pipeline([hidden]);
    expect(await call("nope", {})).toMatchObject({ decision: ToolDecision.DENIED, rule: "tool:not-declared" });
    const ext = await call("hidden", {});
    expect(ext.content).toContain(`call_tool({"name": "hidden"`);
  });

  it("hands call_tool's target the parsed arguments: the text is parsed exactly once", async () => {
    const ext = fakeTool("ext", "read", false);
    const { call, deps } = pipeline([ext]);
    deps.disclosure.disclose("s1", ["ext"]);
    const parse = vi.spyOn(JSON, "parse");
    const res = await call("call_tool", { name: "ext", arguments: { path: "a", n: [1, 2] } });
    expect(res).toMatchObject({ decision: ToolDecision.ALLOWED, resolvedName: "ext", content: "ext ran" });
    expect(parse).toHaveBeenCalledTimes(1);
    expect(ext.planned).toEqual([{ path: "a", n: [1, 2] }]);
  });

  it("holds an ask rule on call_tool as a floor for what it calls, and refuses undisclosed targets", async () => {
    const ext = fakeTool("ext", "read", false);
    const { call, deps } = pipeline([ext], {
      policy: { rules: [{ tool: "call_tool", effect: "ask", name: "review" }] },
    });
    expect(await call("call_tool", { name: "ext", arguments: {} })).toMatchObject({
      decision: ToolDecision.DENIED,
      rule: "call_tool:undisclosed",
    });
    deps.disclosure.disclose("s1", ["ext"]);
    expect(await call("call_tool", { name: "ext", arguments: {} })).toMatchObject({
      decision: ToolDecision.STAGED,
      rule: "review",
    });
    expect(ext.executed).toBe(0);
  });

  it("caps a large result into a blob and discloses the blob readers to that session only", async () => {
    const big = fakeTool("big", "read");
    big.result = { text: "word ".repeat(5000), isError: false };
    const { call, deps, audit } = pipeline([big], { result_cap_bytes: 1024 });
    const res = await call("big", {});
    expect(res.blobSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(deps.blobs.get(res.blobSha256)).toBe(big.result.text);
    expect(deps.disclosure.has("s1", "read_blob")).toBe(true);
    expect(deps.disclosure.has("s2", "read_blob")).toBe(false);
    expect(audit[0]).toMatchObject({ kind: "call", decision: "allowed", blob: res.blobSha256 });
  });

  it("turns an unexpected throw while planning into an error result, not a rejected call", async () => {
    const bad = fakeTool("bad", "read");
    bad.plan = () => {
      throw new TypeError("boom");
    };
    const { call } = pipeline([bad]);
    expect(await call("bad", {})).toMatchObject({
      decision: ToolDecision.ALLOWED,
      isError: true,
      rule: "tool:crashed",
      content: "bad failed: boom",
    });
  });
});
