import type { Effect, PolicyRule, Risk } from "../config-types.js";
import { decide, type Decision } from "../policy/rules.js";

/** With no host rule matching, a command reaches nothing: the proxy is an allowlist. */
const NOTHING: Record<Risk, Effect> = { read: "deny", write: "deny", exec: "deny", network: "deny" };

/**
 * Whether the command may open a connection to `host`: the operator's rules that name
 * hosts, read as for a run_command call that reaches it (deny > ask > allow; a rule's
 * `command_prefixes` scope it to commands). The command itself is part of the subject,
 * so what the parser cannot see through (`eval`, `sh -c "$x"`) turns an allow into ask.
 * A rule without `hosts` says nothing about the network and is not consulted.
 */
export function connectionDecision(rules: readonly PolicyRule[], host: string, command: string): Decision {
  const d = decide(
    rules.filter((r) => r.hosts !== undefined),
    NOTHING,
    { tool: "run_command", risk: "network", paths: [], hosts: [host], command },
  );
  return d.rule === "default:network" ? { effect: "deny", rule: "net:no-rule" } : d;
}
