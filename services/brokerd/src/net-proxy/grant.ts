import type { PolicyRule } from "../config-types.js";
import type { NetworkAsk, ProposalRecord, ProposalStore } from "../staging.js";
import { connectionDecision } from "./allow.js";

/**
 * A person's decision on a network proposal. Nothing runs: the applied proposal is
 * the grant itself, found by the proxy in the store (so a restart keeps it). A deny
 * rule added since staging wins over the approval, as for every staged call.
 */
export function decideNetworkAsk(
  store: ProposalStore,
  rules: readonly PolicyRule[],
  p: ProposalRecord,
  ask: NetworkAsk,
  approve: boolean,
  reason: string,
): ProposalRecord {
  const where = `${ask.host}:${ask.port}`;
  if (!approve)
    return store.finish(
      p,
      "rejected",
      `Rejected by a person${reason ? `: ${reason}` : ""}. ${where} stays refused for this session's commands; do not retry it.`,
      reason,
    );
  const now = connectionDecision(rules, ask.host, ask.command);
  if (now.effect === "deny") return store.finish(p, "failed", `Not applied: policy now denies ${where} (${now.rule}).`);
  return store.finish(
    p,
    "applied",
    `${where} is allowed for this session's commands from now on; re-run the command that needed it.`,
  );
}
