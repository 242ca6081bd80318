import { describe, expect, it } from "vitest";
import { ThinkingCap, controlOutcome } from "../src/thinking-cap.js";
import { recording } from "./support/recordings.js";

describe("ThinkingCap", () => {
  it("fires exactly once, on the delta that reaches the cap", () => {
    const cap = new ThinkingCap(3);
    expect([1, 2, 3, 4, 5].map(() => cap.onReasoningDelta())).toEqual([false, false, true, false, false]);
    expect(cap.tokens).toBe(5);
    expect(cap.fired).toBe(true);
  });

  it("never fires without a cap", () => {
    const cap = new ThinkingCap(0);
    for (let i = 0; i < 100; i++) expect(cap.onReasoningDelta()).toBe(false);
  });
});

describe("controlOutcome", () => {
  const answer = (name: string) => {
    const r = recording(name).response;
    return controlOutcome(r.status, JSON.parse(r.body));
  };
  it("accepts only success:true (reasoning-control-response)", () => {
    expect(answer("reasoning-control-response")).toEqual({ accepted: true, message: "" });
  });
  it("refuses success:false and non-200 with the server's words", () => {
    expect(answer("error-control-unknown-id")).toEqual({
      accepted: false,
      message: "no active completion for this id",
    });
    expect(answer("error-control-bad-action")).toEqual({ accepted: false, message: "unknown control action" });
    expect(controlOutcome(502, undefined)).toEqual({ accepted: false, message: "HTTP 502" });
  });
});
