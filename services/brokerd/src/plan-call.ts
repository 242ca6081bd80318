import { messageOf, type Logger } from "@boxmaker/common";
import type { BlobStore } from "./blobs.js";
import { denied, type StepOutcome } from "./call-outcome.js";
import { resolve } from "node:path";
import type { BrokerConfig, PolicyRule } from "./config-types.js";
import { Refused, ToolError } from "./errors.js";
import { pathRuledFor, subjectOf } from "./policy/gate.js";
import type { PathGuard } from "./policy/paths.js";
import { decide, type Decision } from "./policy/rules.js";
import type { Sandbox } from "./sandbox.js";
import { notPlannedHere, type Plan, type ToolContext, type ToolDef, type ToolText } from "./tool-table.js";
import { checkArguments } from "./validate.js";

/** What planning and running a tool needs from the broker. */
export interface PlanDeps {
  readonly config: BrokerConfig;
  readonly guard: PathGuard;
  readonly blobs: BlobStore;
  readonly sandbox: Sandbox;
  readonly log: Logger;
}

export interface Checked {
  plan: Plan;
  decision: Decision;
}

function toolContext(d: PlanDeps, signal: AbortSignal, tool?: ToolDef, call?: ToolContext["call"]): ToolContext {
  const pathRuled = pathRuledFor(d.config.policy.rules, tool);
  return {
    config: d.config,
    guard: d.guard,
    blobs: d.blobs,
    sandbox: d.sandbox,
    signal,
    ...(call ? { call } : {}),
    ...(pathRuled ? { pathRuled } : {}),
  };
}

/**
 * Schema, then plan (path checks), then policy. The same sequence runs again
 * when a person approves a staged call, against the disk as it is then.
 */
export async function planCall(
  d: PlanDeps,
  tool: ToolDef,
  args: unknown,
  signal: AbortSignal,
  call?: ToolContext["call"],
): Promise<Checked | StepOutcome> {
  const bad = checkArguments(tool, args);
  if (bad) return denied("arguments:schema", bad);
  if (tool.kind === "meta" || tool.kind === "external") return denied("tool:invalid-call", notPlannedHere(tool));
  let plan: Plan;
  try {
    plan = await tool.plan(args, toolContext(d, signal, tool, call));
  } catch (err) {
    if (err instanceof Refused) return denied(err.rule, `Refused: ${err.message}.`);
    if (err instanceof ToolError) return denied("tool:invalid-call", err.message);
    // A path the file system itself rejects (ELOOP, ENAMETOOLONG, EISDIR, …) is a refusal, not a crash:
    // planning failed, so nothing may run.
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code === "string" && /^E[A-Z]+$/.test(code))
      return denied("path:unusable", `Refused: the path cannot be used (${code}: ${messageOf(err).slice(0, 200)}).`);
    throw err;
  }
  const decision = decide(d.config.policy.rules, d.config.policy.defaults, subjectOf(tool, plan));
  const scope = ruleNamed(d.config.policy.rules, decision.rule)?.paths;
  if (scope && plan.scopeWrites) plan.scopeWrites(writableDirs(scope, d.guard.roots));
  // A reviewed path (AGENTS.md, .vscode/, package.json…) is written only with a person's approval, whatever
  // the rules say; a deny still wins.
  const reviewed = plan.paths.find((p) => p.reviewed)?.reviewed;
  // Named as the reason even where a rule would have asked anyway: the person sees why it cannot be allowed.
  if (reviewed && decision.effect !== "deny")
    return { plan, decision: { effect: "ask", rule: `protected:${reviewed}` } };
  return { plan, decision };
}

/** The rule a decision names (`name`, or `rule[i]` for an unnamed one). */
function ruleNamed(rules: readonly PolicyRule[], name: string): PolicyRule | undefined {
  const i = /^rule\[(\d+)\]$/.exec(name);
  return i ? rules[Number(i[1])] : rules.find((r) => r.name === name);
}

/**
 * The directories a rule's path globs name: each glob's segments before its
 * first wildcard. A glob with no such prefix (\`**\/*.ts\`) names no directory
 * a bind can express, so it grants no writes at all: narrower, never wider.
 */
function writableDirs(globs: readonly string[], roots: readonly string[]): string[] {
  const out = new Set<string>();
  for (const g of globs) {
    const segs = g.split("/");
    const lit: string[] = [];
    for (const s of segs) {
      if (/[*?[]/.test(s)) break;
      lit.push(s);
    }
    const fixed = lit.join("/");
    if (g.startsWith("/")) {
      if (fixed && fixed !== "/" && roots.some((r) => fixed === r || fixed.startsWith(`${r}/`))) out.add(fixed);
    } else if (fixed) for (const r of roots) out.add(resolve(r, fixed));
  }
  return [...out].filter((d) => roots.some((r) => d.startsWith(`${r}/`) || d === r));
}

export const isChecked = (c: Checked | StepOutcome): c is Checked => "plan" in c;

/** Runs an allowed plan; a refusal or a fixable mistake is the call's error text, not a crash. */
export async function executePlan(log: Logger, tool: ToolDef, plan: Plan, signal: AbortSignal): Promise<ToolText> {
  try {
    return await plan.execute();
  } catch (err) {
    if (signal.aborted) throw err;
    if (err instanceof Refused) return { text: `Refused: ${err.message}.`, isError: true };
    if (err instanceof ToolError) return { text: err.message, isError: true };
    log.error({ err, tool: tool.name }, "tool failed");
    return { text: `${tool.name} failed: ${messageOf(err)}`, isError: true };
  }
}
