import { ToolDecision, type CallToolRequest, type CallToolResponse } from "@boxmaker/common";
import { READ_ONLY_RULE } from "./policy/mode.js";
import type { Plan } from "./tool-table.js";

/** One call as brokerd's pipeline takes it: the wire's CallToolRequest fields (the arguments are parsed once, by the pipeline). */
export type CallRequest = Pick<CallToolRequest, "sessionId" | "callId" | "name" | "argumentsJson"> & {
  /** The session's permission mode as loopd sent it ("" or absent: ask). */
  mode?: string;
};

/** What became of one call: the wire's CallToolResponse fields, so nothing translates it on the way out. */
export type CallOutcome = Pick<
  CallToolResponse,
  "decision" | "content" | "isError" | "rule" | "proposalId" | "blobSha256" | "durationMs" | "resolvedName"
>;

/** What one step of the pipeline decides; the pipeline adds timing and the resolved name. */
export type StepOutcome = Omit<CallOutcome, "durationMs" | "resolvedName" | "proposalId" | "blobSha256"> & {
  proposalId?: string;
  blobSha256?: string;
};

export const denied = (rule: string, content: string): StepOutcome => ({
  decision: ToolDecision.DENIED,
  content,
  isError: true,
  rule,
});

/** What a plan reaches, for the model's denial message. */
export function describeTargets(plan: Plan): string {
  if (plan.command !== undefined) return `(command: ${plan.command})`;
  if (plan.paths.length) return `on ${plan.paths.map((p) => p.rel).join(", ")}`;
  if (plan.hosts?.length) return `(hosts: ${plan.hosts.join(", ")})`;
  return "";
}

/** A policy deny, worded so the model stops retrying. `what` names the call ("write_file on a.txt"). */
export const policyDenial = (rule: string, what: string, why = ""): StepOutcome =>
  denied(
    rule,
    `Denied by policy (${rule}): ${what} is not allowed${why}. Do not retry it; take another approach or ask the user.`,
  );

/** A call read-only mode refuses, worded so the model plans instead of retrying. */
export const planModeDenial = (what: string): StepOutcome =>
  denied(
    READ_ONLY_RULE,
    `Refused in plan mode (the session is read-only): ${what} would change something. Only reads and find_tool run in this mode; do not retry it: describe the change you would make, or ask the user to switch modes.`,
  );

export const stagedOutcome = (rule: string, proposalId: string): StepOutcome => ({
  decision: ToolDecision.STAGED,
  content: `Staged for review as proposal ${proposalId} (${rule}): a person must approve it, and it has NOT been applied yet. Continue with work that does not depend on it, or end your turn and say what is waiting for approval.`,
  isError: false,
  rule,
  proposalId,
});
