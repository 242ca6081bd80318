import { DEFAULT_MODE, ToolDecision, decisionForEffect, messageOf, parseMode } from "@boxmaker/common";
import { parseArguments } from "./arguments.js";
import { callRecord, type AuditRecord } from "./audit.js";
import {
  denied,
  describeTargets,
  planModeDenial,
  policyDenial,
  stagedOutcome,
  type CallOutcome,
  type CallRequest,
  type StepOutcome,
} from "./call-outcome.js";
import { normalizeCallToolArgs, resolveCallTool } from "./call-tool.js";
import type { Checkpoints } from "./checkpoints.js";
import type { Disclosure } from "./disclosure.js";
import { formatFound, type ToolSearch } from "./find-tool.js";
import type { Hooks } from "./hooks/hooks.js";
import { keepChange } from "./keep-change.js";
import { executePlan, isChecked, planCall, type PlanDeps } from "./plan-call.js";
import { metaGate, withFloor } from "./policy/gate.js";
import { READ_ONLY_RULE, underMode } from "./policy/mode.js";
import type { Decision } from "./policy/rules.js";
import { capForSession } from "./result-cap.js";
import type { ResultSecrets } from "./secrets/result-secrets.js";
import type { ProposalStore } from "./staging.js";
import type { Plan, ToolDef, ToolTable } from "./tool-table.js";
import type { CallToolArgs, FindToolArgs } from "./tools/meta.js";
import { checkArguments } from "./validate.js";

/** Everything one call touches, so the pipeline can run against fakes. */
export interface PipelineDeps extends PlanDeps {
  readonly table: ToolTable;
  readonly disclosure: Disclosure;
  readonly search: ToolSearch;
  readonly proposals: ProposalStore;
  readonly checkpoints: Checkpoints;
  readonly secrets: ResultSecrets;
  /** pre_tool and post_tool hooks; absent: none. */
  readonly hooks?: Hooks;
  record(r: AuditRecord): void;
}

/** What a call resolved to, gathered on the way for the audit line. */
interface Trace {
  resolved: string;
  plan?: Plan;
}

/**
 * One tool call, start to end: parse the arguments once, gate meta tools,
 * resolve call_tool's target, plan and decide by policy, then run, stage or
 * deny; cap the result; write one audit line.
 */
export class CallPipeline {
  constructor(private readonly d: PipelineDeps) {}

  async call(req: CallRequest, signal: AbortSignal): Promise<CallOutcome> {
    const t0 = performance.now();
    const trace: Trace = { resolved: req.name };
    let out: StepOutcome;
    try {
      const parsed = parseArguments(req.name, req.argumentsJson, this.d.config.limits.max_argument_bytes);
      out = parsed.ok ? await this.dispatch(req, req.name, parsed.args, signal, trace) : parsed.outcome;
    } catch (err) {
      if (signal.aborted) throw err;
      this.d.log.error({ err, tool: req.name }, "tool call failed unexpectedly");
      out = {
        decision: ToolDecision.ALLOWED,
        content: `${req.name} failed: ${messageOf(err)}`,
        isError: true,
        rule: "tool:crashed",
      };
    }
    const outcome: CallOutcome = {
      proposalId: "",
      blobSha256: "",
      ...out,
      durationMs: performance.now() - t0,
      resolvedName: trace.resolved,
    };
    this.d.record(callRecord(req, outcome, trace.plan));
    return outcome;
  }

  private async dispatch(
    req: CallRequest,
    name: string,
    args: unknown,
    signal: AbortSignal,
    trace: Trace,
  ): Promise<StepOutcome> {
    const tool = this.d.table.get(name);
    if (!tool?.core) {
      const hint = tool
        ? `Use call_tool({"name": "${name}", "arguments": {…}}) after find_tool has shown it.`
        : "Tools not in your list are reached with find_tool, then call_tool.";
      return denied("tool:not-declared", `"${name}" is not one of your tools. ${hint}`);
    }
    let floor: Decision | undefined;
    if (tool.kind === "meta") {
      // Operator rules name meta tools too: a deny on find_tool or call_tool holds.
      const gate = metaGate(this.d.config.policy.rules, tool);
      if (gate.effect === "deny" || (gate.effect === "ask" && tool.name === "find_tool")) {
        const why = gate.effect === "ask" ? " without a person (it cannot be staged)" : "";
        return policyDenial(gate.rule, tool.name, why);
      }
      if (gate.effect === "ask") floor = gate;
    }
    if (tool.name === "find_tool") return this.findTool(req, tool, args);
    if (tool.name === "call_tool") return this.callTool(req, tool, args, signal, trace, floor);
    return this.run(tool, args, req, signal, undefined, trace);
  }

  private findTool(req: CallRequest, tool: ToolDef, args: unknown): StepOutcome {
    const bad = checkArguments(tool, args);
    if (bad) return denied("arguments:schema", bad);
    const { query } = args as FindToolArgs;
    const found = this.d.search.search(query, this.d.config.find_tool_results);
    this.d.disclosure.disclose(
      req.sessionId,
      found.flatMap((f) => [f.tool.name, ...(f.also ?? [])]),
    );
    return {
      decision: ToolDecision.ALLOWED,
      content: formatFound(query, found),
      isError: false,
      rule: "meta:find_tool",
    };
  }

  private async callTool(
    req: CallRequest,
    tool: ToolDef,
    raw: unknown,
    signal: AbortSignal,
    trace: Trace,
    floor: Decision | undefined,
  ): Promise<StepOutcome> {
    const args = normalizeCallToolArgs(raw);
    const bad = checkArguments(tool, args);
    if (bad) return denied("arguments:schema", bad);
    const r = resolveCallTool(args as CallToolArgs, this.d.table, (n) => this.d.disclosure.has(req.sessionId, n));
    if (!r.ok) return denied(r.rule, r.message);
    trace.resolved = r.tool.name;
    // The target's arguments are already a value: handed on as they are, never re-encoded.
    if (r.tool.kind === "meta") return this.dispatch(req, r.tool.name, r.args, signal, trace);
    return this.run(r.tool, r.args, req, signal, floor, trace);
  }

  /** Whether brokerd holds what the tool does (see ModeFacts.contained). */
  private contained(tool: ToolDef): boolean {
    if (tool.kind === "mcp") return false;
    return tool.risk !== "exec" || this.d.config.sandbox.mode === "bwrap";
  }

  private async run(
    tool: ToolDef,
    args: unknown,
    req: CallRequest,
    signal: AbortSignal,
    floor: Decision | undefined,
    trace: Trace,
  ): Promise<StepOutcome> {
    const checked = await planCall(this.d, tool, args, signal, { session: req.sessionId, callId: req.callId });
    if (!isChecked(checked)) return checked;
    const { plan } = checked;
    trace.plan = plan;
    const decision = underMode(parseMode(req.mode ?? "") ?? DEFAULT_MODE, withFloor(floor, checked.decision), {
      tool: tool.name,
      risk: tool.risk,
      contained: this.contained(tool),
    });
    const verdict = decisionForEffect(decision.effect);
    if (decision.rule === READ_ONLY_RULE)
      return planModeDenial([tool.name, describeTargets(plan)].filter(Boolean).join(" "));
    if (verdict === ToolDecision.DENIED)
      return policyDenial(decision.rule, [tool.name, describeTargets(plan)].filter(Boolean).join(" "));
    const ctx = { sessionId: req.sessionId, callId: req.callId, tool: tool.name, args };
    // Before staging too: a person is not asked about a call a hook would refuse.
    const veto = await this.d.hooks?.preTool(ctx, signal);
    if (veto)
      return denied(
        "hook:denied",
        `Denied by the pre_tool hook "${veto.hook}": ${veto.reason}\nDo not retry it unchanged; take another approach or ask the user.`,
      );
    if (verdict === ToolDecision.STAGED) {
      const p = this.d.proposals.stage({
        session_id: req.sessionId,
        call_id: req.callId,
        tool: tool.name,
        // Stored as text because it outlives this process; approval parses it back.
        arguments_json: JSON.stringify(args),
        preview: plan.preview ?? `${tool.name} ${JSON.stringify(args)}`,
        rule: decision.rule,
        checks: plan.checks ?? {},
      });
      return stagedOutcome(decision.rule, p.id);
    }
    const r = await executePlan(this.d.log, tool, plan, signal);
    if (!r.isError) {
      keepChange(this.d.checkpoints, this.d.log, plan, {
        session: req.sessionId,
        callId: req.callId,
        tool: tool.name,
        proposalId: "",
      });
    }
    const capped = capForSession(this.d, req.sessionId, tool, plan, r.text, r.discloses);
    // A post_tool hook's words reach the model too: masked like the result (a hook may print what it read).
    const note = this.d.secrets.mask(
      tool,
      undefined,
      (await this.d.hooks?.postTool({ ...ctx, result: capped.text, isError: r.isError }, signal)) ?? "",
    );
    return {
      decision: ToolDecision.ALLOWED,
      content: capped.text + note,
      isError: r.isError,
      rule: decision.rule,
      blobSha256: capped.blob ?? "",
      // Allowed, and it ran: the id is only for asking the person about what it staged on the way.
      ...(r.proposalId ? { proposalId: r.proposalId } : {}),
    };
  }
}
