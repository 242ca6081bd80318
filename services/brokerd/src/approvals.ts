import { messageOf } from "@boxmaker/common";
import { proposalRecord, type AuditRecord } from "./audit.js";
import type { Checkpoints } from "./checkpoints.js";
import type { Disclosure } from "./disclosure.js";
import { ProposalNotFound, ProposalNotPending, Refused, ToolError } from "./errors.js";
import type { Hooks } from "./hooks/hooks.js";
import { keepChange } from "./keep-change.js";
import { decideNetworkAsk } from "./net-proxy/grant.js";
import { isChecked, planCall, type PlanDeps } from "./plan-call.js";
import { capForSession } from "./result-cap.js";
import type { ResultSecrets } from "./secrets/result-secrets.js";
import { staleReason, type ProposalRecord, type ProposalStore } from "./staging.js";
import type { ToolTable, ToolText } from "./tool-table.js";

/** What deciding a proposal touches, so approval can run against fakes. */
export interface ApprovalDeps extends PlanDeps {
  readonly table: ToolTable;
  readonly proposals: ProposalStore;
  readonly checkpoints: Checkpoints;
  readonly disclosure: Disclosure;
  readonly secrets: ResultSecrets;
  /** post_tool hooks run after an approved call as after an allowed one; absent: none. */
  readonly hooks?: Hooks;
  record(r: AuditRecord): void;
}

/** A person's decisions on staged calls: reject, or approve and re-plan against the disk as it is now. */
export class Approvals {
  /** Proposals being decided right now: a second decision on one waits for nothing and is refused. */
  private readonly deciding = new Set<string>();

  constructor(private readonly d: ApprovalDeps) {}

  list(sessionId: string, includeDecided: boolean): ProposalRecord[] {
    return this.d.proposals.list({ sessionId, includeDecided });
  }

  /**
   * Approval re-runs every check against the current disk: schema, path
   * resolution (a symlink swapped since staging resolves elsewhere), policy
   * (a deny added since wins), and the staged facts (the file's hash). Only
   * then does the staged action run.
   */
  async decide(id: string, approve: boolean, reason: string): Promise<ProposalRecord> {
    const p = this.d.proposals.get(id);
    if (!p) throw new ProposalNotFound(id);
    if (p.state !== "pending" || this.deciding.has(id)) throw new ProposalNotPending(id, p.state);
    this.deciding.add(id);
    const t0 = performance.now();
    try {
      const done = p.network
        ? decideNetworkAsk(this.d.proposals, this.d.config.policy.rules, p, p.network, approve, reason)
        : approve
          ? await this.approve(p)
          : this.d.proposals.finish(p, "rejected", `Rejected by a person${reason ? `: ${reason}` : ""}.`, reason);
      this.d.record(proposalRecord(done, performance.now() - t0));
      return done;
    } finally {
      this.deciding.delete(id);
    }
  }

  /**
   * The turn that staged these was cancelled while it waited (loopd): each one
   * still pending is withdrawn, so nobody can apply a change the model is no
   * longer waiting for. One being decided right now is left to its decision.
   */
  withdraw(ids: readonly string[], reason: string): ProposalRecord[] {
    const out: ProposalRecord[] = [];
    for (const id of ids) {
      const p = this.d.proposals.get(id);
      if (!p) continue;
      if (p.state !== "pending" || this.deciding.has(id)) {
        out.push(p);
        continue;
      }
      const done = this.d.proposals.finish(
        p,
        "withdrawn",
        `Withdrawn: ${reason || "the turn that staged it was cancelled"}. Nothing was applied; it can no longer be approved.`,
      );
      this.d.record(proposalRecord(done, 0));
      out.push(done);
    }
    return out;
  }

  private async approve(p: ProposalRecord): Promise<ProposalRecord> {
    const fail = (why: string) => this.d.proposals.finish(p, "failed", `Not applied: ${why}`);
    const tool = this.d.table.get(p.tool);
    if (!tool) return fail(`the tool ${p.tool} is no longer available.`);
    const checked = await planCall(this.d, tool, JSON.parse(p.arguments_json), new AbortController().signal);
    if (!isChecked(checked)) return fail(checked.content);
    if (checked.decision.effect === "deny") return fail(`policy now denies it (${checked.decision.rule}).`);
    const stale = staleReason(p.checks, checked.plan.checks);
    if (stale) return fail(`${stale}. Nothing was changed; the model can stage it again.`);
    let r: ToolText;
    try {
      r = await checked.plan.execute();
    } catch (err) {
      if (err instanceof Refused || err instanceof ToolError) return fail(`${err.message}.`);
      this.d.log.error({ err, tool: tool.name }, "approved action failed");
      return fail(`${tool.name} failed: ${messageOf(err)}`);
    }
    // An MCP call that errored did not do what was approved (the server was down, refused or timed out,
    // or the tool itself failed): that is a failure to apply, reported with the server's words.
    if (tool.kind === "mcp" && r.isError)
      return fail(`${tool.name} failed: ${this.d.secrets.mask(tool, checked.plan, r.text)}`);
    if (!r.isError) {
      keepChange(this.d.checkpoints, this.d.log, checked.plan, {
        session: p.session_id,
        callId: p.call_id,
        tool: tool.name,
        proposalId: p.id,
      });
    }
    // It ran: a command's non-zero exit is part of its result, not a failure to apply.
    const text = capForSession(this.d, p.session_id, tool, checked.plan, r.text, r.discloses).text;
    const ctx = { sessionId: p.session_id, callId: p.call_id, tool: tool.name, args: JSON.parse(p.arguments_json) };
    const note = this.d.secrets.mask(
      tool,
      undefined,
      (await this.d.hooks?.postTool({ ...ctx, result: text, isError: r.isError })) ?? "",
    );
    return this.d.proposals.finish(p, "applied", text + note);
  }
}
