import { describe, expect, it } from "vitest";
import {
  SessionRoleSchema,
  ToolDecision,
  ToolDecisionSchema,
  decisionName,
  decisionOf,
  enumNames,
} from "../src/index.js";

describe("enum names from the generated descriptors", () => {
  it("every tool decision round-trips through its logged name; the zero value and an unknown name read as none", () => {
    for (const v of ToolDecisionSchema.values) {
      const name = decisionName(v.number as ToolDecision);
      expect(decisionOf(name)).toBe(v.number);
    }
    expect([ToolDecision.ALLOWED, ToolDecision.DENIED, ToolDecision.STAGED].map(decisionName)).toEqual([
      "allowed",
      "denied",
      "staged",
    ]);
    expect(decisionName(ToolDecision.UNSPECIFIED)).toBe("none");
    expect(decisionName(99 as ToolDecision)).toBe("none");
    expect(decisionOf("bogus" as "none")).toBe(ToolDecision.UNSPECIFIED);
  });

  it("a zero value sharing a real value's name maps that name to the real value (an unset role is main)", () => {
    const roles = enumNames(SessionRoleSchema, "main");
    expect(roles.nameOf(0)).toBe("main");
    expect(roles.valueOf("main")).toBe(1);
    expect(roles.valueOf("subagent")).toBe(2);
    expect(roles.nameOf(3)).toBe("scheduled");
  });
});
