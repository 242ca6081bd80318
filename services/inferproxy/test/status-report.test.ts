import { describe, expect, it } from "vitest";
import { notRun } from "../src/server-check/self-test.js";
import { statusReport, type StatusFacts } from "../src/status-report.js";

const contract = { template_sha256: "a".repeat(64), n_ctx_per_slot: 4096, total_slots: 2 };
const passed = { ...notRun(contract), ran: true, passed: true, checkedAtUnixMs: 1234 };

function facts(over: Partial<StatusFacts> = {}): StatusFacts {
  return {
    state: "ok",
    verified: true,
    selfTest: passed,
    props: {
      model_alias: "alias",
      model_path: "/m.gguf",
      build_info: "b1",
      default_generation_settings: { n_ctx: 4096 },
    },
    upstream: "unix:/llama.sock",
    totalSlots: 2,
    slotsBody: undefined,
    throughput: { generationTokensPerS: 0, prefillTokensPerS: 0, requests: 0 },
    holding: () => ({ heldBy: "", waiting: 0 }),
    ...over,
  };
}

describe("statusReport", () => {
  it("lists the contract's slots with the server's view and the locks' holders", () => {
    const r = statusReport(
      facts({
        slotsBody: [{ id: 1, n_ctx: 2048, is_processing: true }, { id: 3 }],
        holding: (id) => (id === 1 ? { heldBy: "req-7", waiting: 2 } : { heldBy: "", waiting: 0 }),
      }),
    );
    expect(r).toMatchObject({ serverState: "ok", buildInfo: "b1", model: "alias", upstream: "unix:/llama.sock" });
    expect(r.slots).toEqual([
      { id: 0, nCtx: 4096, isProcessing: false, heldBy: "", waiting: 0 },
      { id: 1, nCtx: 2048, isProcessing: true, heldBy: "req-7", waiting: 2 },
      { id: 3, nCtx: 4096, isProcessing: false, heldBy: "", waiting: 0 },
    ]);
    expect(r.selfTest).toMatchObject({ ran: true, passed: true, checkedAtUnixMs: 1234n });
  });

  it("a failed self-test carries its accept command; a server that is down carries none", () => {
    const failed = {
      ...passed,
      passed: false,
      mismatches: ["total_slots: x"],
      acceptCommand: "`boxmaker contract accept`",
    };
    expect(statusReport(facts({ selfTest: failed })).selfTest).toMatchObject({
      passed: false,
      acceptCommand: "`boxmaker contract accept`",
    });
    expect(statusReport(facts({ selfTest: failed, state: "down", verified: false })).selfTest).toMatchObject({
      ran: false,
      acceptCommand: "",
    });
  });

  it("does not claim a passed self-test for a server that is down or loading", () => {
    const r = statusReport(facts({ state: "down", verified: false, props: undefined }));
    expect(r.selfTest).toMatchObject({ ran: false, passed: false, mismatches: [] });
    expect(r.model).toBe("");
    expect(r.slots?.map((s) => s.nCtx)).toEqual([0, 0]);
  });
});
