import { createWriteStream, fstatSync, mkdirSync, openSync, renameSync, rmSync, type WriteStream } from "node:fs";
import { dirname } from "node:path";
import { decisionName, messageOf, type DecisionName, type Logger } from "@boxmaker/common";
import type { CallOutcome, CallRequest } from "./call-outcome.js";
import type { UndoOutcome } from "./checkpoints.js";
import type { ProposalRecord } from "./staging.js";
import type { Plan } from "./tool-table.js";

export interface AuditRecord {
  kind: "call" | "proposal" | "undo" | "connection" | "hook";
  session: string;
  call_id?: string;
  tool: string;
  /** For call_tool: the tool that was actually run. */
  resolved?: string;
  decision:
    | DecisionName
    | "approved"
    | "rejected"
    | "failed"
    | "withdrawn"
    | "restored"
    | "deleted"
    | "refused"
    | "gone"
    | "ok"
    | "timed-out";
  rule: string;
  duration_ms: number;
  result_bytes: number;
  is_error: boolean;
  blob?: string;
  proposal?: string;
  /** What the call reached, as the policy saw it: workspace-relative paths and hosts (fetch_url, MCP servers). */
  paths?: string[];
  hosts?: string[];
  /** A command's connection through the network proxy (net-proxy/audit-line.ts). */
  connection?: {
    run: string;
    command: string;
    host: string;
    port: number;
    address?: string;
    bytes_up: number;
    bytes_down: number;
    error?: string;
  };
  /** A hook's run (hooks/audit-line.ts): which, from where, and how it ended. */
  hook?: {
    event: string;
    name: string;
    origin: string;
    sandboxed: boolean;
    exit_code: number | null;
    dropped_bytes: number;
  };
}

/** How much audit trail is kept on disk: `audit.jsonl` up to `rotateBytes`, then `.1` … `.<keepFiles>`. */
export interface AuditRetention {
  rotateBytes: number;
  keepFiles: number;
}

/**
 * One JSON line per decision and call, to a file in state_dir and to the log.
 * The file is rotated when it passes `rotateBytes`: `audit.jsonl` becomes
 * `audit.jsonl.1`, `.1` becomes `.2` and so on, and the oldest past
 * `keepFiles` is deleted, so the trail on disk stays under
 * (keepFiles + 1) × rotateBytes plus one line. The journal has every line too.
 */
export class AuditLog {
  private out!: WriteStream;
  private bytes = 0;
  /** Rotated-out streams still flushing their last lines into the renamed file. */
  private readonly ending = new Set<Promise<void>>();

  constructor(
    private readonly path: string,
    private readonly log: Logger,
    private readonly retention: AuditRetention = { rotateBytes: Number.MAX_SAFE_INTEGER, keepFiles: 0 },
  ) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o750 });
    this.open();
    if (this.bytes >= retention.rotateBytes) this.rotate();
  }

  record(r: AuditRecord): void {
    const line = { ts: new Date().toISOString(), ...r };
    const text = `${JSON.stringify(line)}\n`;
    this.out.write(text);
    this.bytes += Buffer.byteLength(text);
    this.log.info({ audit: line }, "tool decision");
    if (this.bytes >= this.retention.rotateBytes) this.rotate();
  }

  async close(): Promise<void> {
    if (!this.out.writableEnded) await endStream(this.out);
    await Promise.all(this.ending);
  }

  /**
   * Opened synchronously, so the descriptor is this file's before anything
   * is renamed: lines still buffered for the old stream reach the old file
   * under its new name, in order. Buffered and append-only: ordered lines
   * without a synchronous write on every call.
   */
  private open(): void {
    const fd = openSync(this.path, "a", 0o640);
    this.bytes = fstatSync(fd).size;
    this.out = createWriteStream(this.path, { fd });
    this.out.on("error", (err) => this.log.error({ err }, "audit log write failed"));
  }

  private rotate(): void {
    const { keepFiles } = this.retention;
    try {
      rmSync(`${this.path}.${keepFiles}`, { force: true });
      for (let i = keepFiles - 1; i >= 1; i--) {
        try {
          renameSync(`${this.path}.${i}`, `${this.path}.${i + 1}`);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
        }
      }
      if (keepFiles > 0) renameSync(this.path, `${this.path}.1`);
      else rmSync(this.path, { force: true });
    } catch (err) {
      // Keep writing where it is: a trail too long beats a trail lost.
      this.log.error({ err: messageOf(err) }, "audit log rotation failed");
      this.bytes = 0;
      return;
    }
    const old = this.out;
    this.open();
    const ended = endStream(old).finally(() => this.ending.delete(ended));
    this.ending.add(ended);
    this.log.info({ path: this.path, keep_files: keepFiles }, "audit log rotated");
  }
}

const endStream = (s: WriteStream) => new Promise<void>((resolve) => s.end(() => resolve()));

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

/** A person's decision on a proposal, after it was applied, rejected or failed; or its withdrawal with its turn. */
export function proposalRecord(done: ProposalRecord, durationMs: number): AuditRecord {
  return {
    kind: "proposal",
    session: done.session_id,
    call_id: done.call_id,
    tool: done.tool,
    decision:
      done.state === "applied"
        ? "approved"
        : done.state === "rejected" || done.state === "withdrawn"
          ? done.state
          : "failed",
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
