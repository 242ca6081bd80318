import { afterEach, describe, expect, it, vi } from "vitest";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { ProposalSchema, type Proposal } from "@boxmaker/common";
import { ApprovalWaits, lateDecisionNote } from "../src/loop/approvals.js";

const proposal = (p: MessageInitShape<typeof ProposalSchema>): Proposal =>
  create(ProposalSchema, { id: "p1", sessionId: "s", tool: "write_file", ...p });

afterEach(() => vi.useRealTimers());

describe("ApprovalWaits", () => {
  it.each([
    ["applied", "wrote a.txt", { isError: false, content: "wrote a.txt", proposal: { id: "p1", state: "applied" } }],
    [
      "rejected",
      "not now",
      {
        isError: true,
        content: "the operator rejected this (proposal p1): not now",
        proposal: { id: "p1", state: "rejected" },
      },
    ],
    [
      "failed",
      "disk full",
      {
        isError: true,
        content: "approved but not applied (proposal p1): disk full",
        proposal: { id: "p1", state: "failed" },
      },
    ],
  ])("resumes the waiting turn the moment a person decides (%s)", async (state, result, outcome) => {
    const w = new ApprovalWaits(60_000);
    const waiting = w.wait("p1", new AbortController().signal);
    expect(w.pending()).toEqual(["p1"]);
    expect(w.decided(proposal({ state, result }))).toBe(true);
    await expect(waiting).resolves.toEqual(outcome);
    expect(w.pending()).toEqual([]);
  });

  it("stops waiting after its time and tells the model the proposal is still pending", async () => {
    vi.useFakeTimers();
    const w = new ApprovalWaits(1_000);
    const waiting = w.wait("p1", new AbortController().signal);
    await vi.advanceTimersByTimeAsync(1_000);
    await expect(waiting).resolves.toMatchObject({
      isError: false,
      proposal: { id: "p1", state: "pending" },
      content: expect.stringContaining("boxmaker approve p1"),
    });
    // A decision after that finds no turn waiting: it is late, and noted for the next turn instead.
    expect(w.decided(proposal({ state: "applied" }))).toBe(false);
  });

  it("a cancelled turn stops waiting with the cancellation", async () => {
    const w = new ApprovalWaits(60_000);
    const ac = new AbortController();
    const waiting = w.wait("p1", ac.signal);
    ac.abort(new Error("cancelled by the operator"));
    await expect(waiting).rejects.toThrow("cancelled by the operator");
    expect(w.pending()).toEqual([]);
  });
});

describe("a late decision", () => {
  it("is told to the model in words that say what happened", () => {
    expect(lateDecisionNote(proposal({ state: "applied", result: "wrote a.txt" }))).toBe(
      "write_file (proposal p1) was approved and applied after your turn ended: wrote a.txt",
    );
    expect(lateDecisionNote(proposal({ state: "rejected" }))).toBe(
      "write_file (proposal p1) was rejected by the operator after your turn ended.",
    );
    expect(lateDecisionNote(proposal({ state: "failed", result: "disk full" }))).toMatch(
      /approved after your turn ended but could not be applied: disk full$/,
    );
  });
});
