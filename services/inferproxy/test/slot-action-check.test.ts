import { describe, expect, it } from "vitest";
import { type RpcError, SlotActionKind, Status, type SlotActionRequest } from "@boxmaker/common";
import { checkSlotAction, slotActionResult } from "../src/slots/slot-action.js";
import { recording } from "./support/recordings.js";

describe("checkSlotAction and slotActionResult", () => {
  const req = (r: Partial<SlotActionRequest>) =>
    ({ slot: 0, action: SlotActionKind.SAVE, filename: "a.bin", ...r }) as SlotActionRequest;

  it("names the action as the server does and keeps the slot and file", () => {
    expect(checkSlotAction(req({ action: SlotActionKind.RESTORE, slot: 1 }), 2)).toEqual({
      slot: 1,
      action: "restore",
      filename: "a.bin",
    });
    expect(checkSlotAction(req({ action: SlotActionKind.ERASE, filename: "" }), 2).action).toBe("erase");
  });

  it("refuses, as INVALID_ARGUMENT naming the field, what the server must not see", () => {
    const field = (r: Partial<SlotActionRequest>) => {
      try {
        checkSlotAction(req(r), 2);
      } catch (e) {
        const err = e as RpcError;
        expect(err.status).toBe(Status.INVALID_ARGUMENT);
        return err.details.field;
      }
      return "accepted";
    };
    expect(field({ action: SlotActionKind.UNSPECIFIED })).toBe("action");
    expect(field({ slot: 2 })).toBe("slot");
    expect(field({ filename: "../etc/passwd" })).toBe("filename");
    expect(field({ filename: ".." })).toBe("filename");
    expect(field({ filename: "" })).toBe("filename");
  });

  it("reads the recorded answers' counts", () => {
    const body = (name: string) => JSON.parse(recording(name).response.body) as unknown;
    const saved = slotActionResult(1, body("slot-save"));
    expect(saved.tokens).toBeGreaterThan(0);
    expect(saved.bytes).toBeGreaterThan(0n);
    expect(slotActionResult(1, body("slot-erase")).tokens).toBeGreaterThanOrEqual(0);
    expect(slotActionResult(1, undefined)).toEqual({ slot: 1, tokens: 0, bytes: 0n, ms: 0 });
  });
});
