import { describe, expect, it } from "vitest";
import { ThinkingCap, ThinkingCapControl, controlOutcome } from "../src/completion/thinking-cap.js";
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

describe("ThinkingCapControl", () => {
  const accepted = { accepted: true, message: "" };

  it("sends reasoning_end once, when the cap is reached, and reports the answer once", async () => {
    const ids: string[] = [];
    const refused: unknown[] = [];
    const c = new ThinkingCapControl(
      2,
      (id) => {
        ids.push(id);
        return Promise.resolve(accepted);
      },
      (o) => refused.push(o),
    );
    expect(c.onReasoningDeltas(1, "id-1")).toBe(false);
    expect(c.unreportedAnswer).toBeUndefined();
    expect(c.onReasoningDeltas(1, "id-1")).toBe(true);
    expect(c.onReasoningDeltas(1, "id-1")).toBe(false);
    expect(ids).toEqual(["id-1"]);
    expect(c.takeEvent("id-1")).toBeUndefined(); // not answered yet
    await c.unreportedAnswer;
    expect(c.takeEvent("id-1")).toEqual({
      event: { case: "thinkingCap", value: { reasoningTokens: 2, completionId: "id-1", accepted: true, message: "" } },
    });
    expect(c.takeEvent("id-1")).toBeUndefined();
    expect(c.unreportedAnswer).toBeUndefined();
    expect(refused).toEqual([]);
  });

  it("a refusal is handed to the caller (who aborts the completion)", async () => {
    const refusal = { accepted: false, message: "no active completion for this id" };
    const refused: unknown[] = [];
    const c = new ThinkingCapControl(
      1,
      () => Promise.resolve(refusal),
      (o) => refused.push(o),
    );
    c.onReasoningDeltas(1, "id");
    await c.settled();
    expect(refused).toEqual([refusal]);
    expect(c.takeEvent("id")?.event).toMatchObject({ case: "thinkingCap", value: { accepted: false } });
  });

  it("without a cap nothing is ever sent", async () => {
    let calls = 0;
    const c = new ThinkingCapControl(
      0,
      () => {
        calls++;
        return Promise.resolve(accepted);
      },
      () => undefined,
    );
    for (let i = 0; i < 50; i++) c.onReasoningDeltas(1, "id");
    await c.settled();
    expect(calls).toBe(0);
    expect(c.takeEvent("id")).toBeUndefined();
  });
});
