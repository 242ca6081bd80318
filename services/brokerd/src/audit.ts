import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { dirname } from "node:path";
import type { Logger } from "@boxmaker/common";

export interface AuditRecord {
  kind: "call" | "proposal" | "undo";
  session: string;
  call_id?: string;
  tool: string;
  /** For call_tool: the tool that was actually run. */
  resolved?: string;
  decision:
    | "allowed"
    | "denied"
    | "staged"
    | "approved"
    | "rejected"
    | "failed"
    | "restored"
    | "deleted"
    | "refused"
    | "gone";
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
