import { enumNames } from "./enum-names.js";
import { ToolDecision, ToolDecisionSchema } from "./gen/boxmaker/v1/broker_pb.js";

/**
 * One vocabulary for what became of a tool call, end to end. The wire enum
 * (`ToolDecision`) is the source of truth; the session log and every display
 * use its own value names lower-cased, so there is nothing to keep in step.
 *
 * A policy rule's *effect* (allow / ask / deny, the words an operator writes
 * in config) is what the rule asks for; the *decision* is what happened to
 * the call. `decisionForEffect` is the one place they meet.
 */

export type DecisionName = "allowed" | "denied" | "staged" | "none";
export type PolicyEffect = "allow" | "ask" | "deny";

const NAMES = enumNames<DecisionName>(ToolDecisionSchema, "none");

const FOR_EFFECT: Record<PolicyEffect, ToolDecision> = {
  allow: ToolDecision.ALLOWED,
  ask: ToolDecision.STAGED,
  deny: ToolDecision.DENIED,
};

/** The log/display name of a wire decision; an unknown future value reads as "none". */
export function decisionName(d: ToolDecision): DecisionName {
  return NAMES.nameOf(d);
}

/** The wire decision of a logged name (old logs included). */
export function decisionOf(name: DecisionName): ToolDecision {
  return NAMES.valueOf(name) as ToolDecision;
}

/** What a policy effect does to a call: allow runs it, ask stages it for a person, deny refuses it. */
export function decisionForEffect(effect: PolicyEffect): ToolDecision {
  return FOR_EFFECT[effect];
}
