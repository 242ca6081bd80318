import type { Effect, PolicyRule } from "../config-types.js";
import type { Plan, ToolDef } from "../tool-table.js";
import { decide, type Decision, type Subject } from "./rules.js";

const ALLOW_ALL = { read: "allow", write: "allow", exec: "allow", network: "allow" } as const;
const STRENGTH: Record<Effect, number> = { allow: 0, ask: 1, deny: 2 };

/**
 * Operator rules on a meta tool (find_tool, call_tool) itself. Only a rule
 * decides: with none, meta tools are allowed whatever the risk defaults say.
 */
export function metaGate(rules: readonly PolicyRule[], tool: ToolDef): Decision {
  return decide(rules, ALLOW_ALL, { tool: tool.name, risk: tool.risk, paths: [], hosts: [] });
}

/** A rule on call_tool itself (ask) is a floor for whatever it calls: the stricter of the two wins. */
export function withFloor(floor: Decision | undefined, d: Decision): Decision {
  return floor && STRENGTH[floor.effect] > STRENGTH[d.effect] ? floor : d;
}

/** The facts rules match on, from a plan. */
export function subjectOf(tool: ToolDef, plan: Plan): Subject {
  return {
    tool: tool.name,
    risk: tool.risk,
    paths: plan.paths,
    ...(plan.command !== undefined ? { command: plan.command } : {}),
    hosts: plan.hosts ?? [],
  };
}

/**
 * Whether a path rule denies a path, or reserves it for a person, for this
 * tool: tools that open files the call did not name (search_files) skip those.
 * Undefined when no rule could.
 */
export function pathRuledFor(
  rules: readonly PolicyRule[],
  tool: ToolDef | undefined,
): ((rel: string, abs: string) => boolean) | undefined {
  const pathRules = rules.filter((r) => r.paths && r.effect !== "allow");
  if (!tool || pathRules.length === 0) return undefined;
  return (rel, abs) =>
    decide(pathRules, ALLOW_ALL, { tool: tool.name, risk: tool.risk, paths: [{ rel, abs }], hosts: [] }).effect !==
    "allow";
}
