import { afterEach, describe, expect, it } from "vitest";
import { Approvals } from "../src/approvals.js";
import { CallPipeline } from "../src/call-pipeline.js";
import { ProposalNotFound, ProposalNotPending } from "../src/errors.js";
import type { ToolDef } from "../src/tool-table.js";
import { fakeDeps, fakeTool } from "./fakes.js";

let cleanup: (() => void) | undefined;
afterEach(() => {
  cleanup?.();
  cleanup = undefined;
});

/** Stages one call of `tool` through the real pipeline and returns the proposal's id. */
async function staged(tools: ToolDef[], name: string) {
  const f = fakeDeps(tools);
  cleanup = f.cleanup;
  const res = await new CallPipeline(f.deps).call(
    { sessionId: "s1", callId: "c1", name, argumentsJson: '{"path":"a"}' },
    new AbortController().signal,
  );
  expect(res.proposalId).not.toBe("");
  return { ...f, id: res.proposalId, approvals: new Approvals(f.deps) };
}

describe("approving a staged call re-plans it against the present", () => {
  it("applies an unchanged proposal once, re-planned with the staged arguments", async () => {
    const put = fakeTool("put", "write");
    put.checks = { base_sha256: "1" };
    const { approvals, id, audit } = await staged([put], "put");
    const done = await approvals.decide(id, true, "");
    expect(done).toMatchObject({ state: "applied", result: "put ran" });
    expect(put.planned).toEqual([{ path: "a" }, { path: "a" }]);
    expect(put.executed).toBe(1);
    expect(audit.at(-1)).toMatchObject({ kind: "proposal", decision: "approved", proposal: id, is_error: false });
    const again = approvals.decide(id, true, "");
    await expect(again).rejects.toBeInstanceOf(ProposalNotPending);
    await expect(again).rejects.toMatchObject({
      code: "PROPOSAL_NOT_PENDING",
      message: `proposal ${id} is already applied`,
    });
  });

  it("fails without running when a staged fact changed since", async () => {
    const put = fakeTool("put", "write");
    put.checks = { base_sha256: "1" };
    const { approvals, id } = await staged([put], "put");
    put.checks = { base_sha256: "2" };
    const done = await approvals.decide(id, true, "");
    expect(done.state).toBe("failed");
    expect(done.result).toMatch(/^Not applied: the file changed on disk since the diff was made\. Nothing was changed/);
    expect(put.executed).toBe(0);
  });

  it("fails without running when policy now denies it", async () => {
    const put = fakeTool("put", "write");
    const { approvals, id, deps } = await staged([put], "put");
    deps.config.policy.rules.push({ tool: "put", effect: "deny", name: "frozen" });
    expect(await approvals.decide(id, true, "")).toMatchObject({
      state: "failed",
      result: "Not applied: policy now denies it (frozen).",
    });
    expect(put.executed).toBe(0);
  });

  it("reports an MCP tool's error as a failure to apply", async () => {
    const remote = fakeTool("srv.put", "write", false, "mcp");
    remote.result = { text: "server said no", isError: true };
    const f = fakeDeps([remote]);
    cleanup = f.cleanup;
    const p = f.deps.proposals.stage({
      session_id: "s1",
      call_id: "c1",
      tool: "srv.put",
      arguments_json: "{}",
      preview: "",
      rule: "default:write",
      checks: {},
    });
    const done = await new Approvals(f.deps).decide(p.id, true, "");
    expect(done).toMatchObject({ state: "failed", result: "Not applied: srv.put failed: server said no" });
  });

  it("records a rejection with the person's reason, and refuses unknown ids by code", async () => {
    const put = fakeTool("put", "write");
    const { approvals, id, audit } = await staged([put], "put");
    expect(await approvals.decide(id, false, "not now")).toMatchObject({
      state: "rejected",
      result: "Rejected by a person: not now.",
      reason: "not now",
    });
    expect(audit.at(-1)).toMatchObject({ kind: "proposal", decision: "rejected", is_error: true });
    const missing = approvals.decide("p-nope", true, "");
    await expect(missing).rejects.toBeInstanceOf(ProposalNotFound);
    await expect(missing).rejects.toMatchObject({ code: "PROPOSAL_NOT_FOUND" });
    expect(put.executed).toBe(0);
  });
});
