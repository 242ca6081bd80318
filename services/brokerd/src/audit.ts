import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { dirname } from "node:path";
import { decisionName, type DecisionName, type Logger } from "@boxmaker/common";
import type { CallOutcome, CallRequest } from "./call-outcome.js";
import type { UndoOutcome } from "./checkpoints.js";
import type { ProposalRecord } from "./staging.js";
import type { Plan } from "./tool-table.js";

export interface AuditRecord {
  kind: "call" | "proposal" | "undo";
  session: string;
  call_id?: string;
  tool: string;
  /** For call_tool: the tool that was actually run. */
  resolved?: string;
  decision: DecisionName | "approved" | "rejected" | "failed" | "restored" | "deleted" | "refused" | "gone";
  rule: string;
  duration_ms: number;
  result_bytes: number;
  is_error: boolean;
  blob?: string;
  proposal?: string;
  /** What the call reached, as the policy saw it: workspace-relative paths and hosts (fetch_url, MCP servers). */
  paths?: string[];
  hosts?: string[];
}

/** One JSON line per decision and call, to a file in state_dir and to the log. */
export class AuditLog {
  private readonly out: WriteStream;

  constructor(
    path: string,
    private readonly log: Logger,
  ) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o750 });
    // Buffered and append-only: ordered lines without a synchronous write on every call.
    this.out = createWriteStream(path, { flags: "a", mode: 0o640 });
    this.out.on("error", (err) => this.log.error({ err }, "audit log write failed"));
  }

  record(r: AuditRecord): void {
    const line = { ts: new Date().toISOString(), ...r };
    this.out.write(`${JSON.stringify(line)}\n`);
    this.log.info({ audit: line }, "tool decision");
  }

  close(): Promise<void> {
    if (this.out.writableEnded) return Promise.resolve();
    return new Promise((resolve) => this.out.end(() => resolve()));
  }
}

const ms = (durationMs: number) => Math.round(durationMs * 1000) / 1000;

/** A tool call's line: the decision in the wire vocabulary's names, and what the policy saw it reach. */
export function callRecord(req: CallRequest, o: CallOutcome, plan: Plan | undefined): AuditRecord {
  return {
    kind: "call",
    session: req.sessionId,
    call_id: req.callId,
    tool: req.name,
    ...(o.resolvedName !== req.name ? { resolved: o.resolvedName } : {}),
    decision: decisionName(o.decision),
    rule: o.rule,
    duration_ms: ms(o.durationMs),
    result_bytes: Buffer.byteLength(o.content),
    is_error: o.isError,
    ...(o.blobSha256 ? { blob: o.blobSha256 } : {}),
    ...(o.proposalId ? { proposal: o.proposalId } : {}),
    ...(plan?.paths.length ? { paths: plan.paths.map((p) => p.rel) } : {}),
    ...(plan?.hosts?.length ? { hosts: plan.hosts } : {}),
  };
}

/** A person's decision on a proposal, after it was applied, rejected or failed. */
export function proposalRecord(done: ProposalRecord, durationMs: number): AuditRecord {
  return {
    kind: "proposal",
    session: done.session_id,
    call_id: done.call_id,
    tool: done.tool,
    decision: done.state === "applied" ? "approved" : done.state === "rejected" ? "rejected" : "failed",
    rule: done.rule,
    duration_ms: ms(durationMs),
    result_bytes: Buffer.byteLength(done.result),
    is_error: done.state !== "applied",
    proposal: done.id,
  };
}

export function undoRecord(sessionId: string, o: UndoOutcome, force: boolean): AuditRecord {
  return {
    kind: "undo",
    session: sessionId,
    call_id: o.change.call_id,
    tool: o.change.tool,
    decision: o.result,
    rule: force ? "undo:force" : "undo",
    duration_ms: 0,
    result_bytes: Buffer.byteLength(o.message),
    is_error: o.result === "refused",
    proposal: o.change.proposal_id,
  };
}
