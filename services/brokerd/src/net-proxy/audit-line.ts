import type { AuditRecord } from "../audit.js";
import type { CallScope } from "./host-asks.js";
import type { ConnectionRecord } from "./connection-record.js";

/** One audit line per connection, tied to its command by the run id and the command's first 200 characters. */
export function connectionLine(run: string, command: string, c: ConnectionRecord, scope?: CallScope): AuditRecord {
  return {
    kind: "connection",
    session: scope?.session ?? "",
    ...(scope ? { call_id: scope.callId } : {}),
    tool: "run_command",
    decision: c.decision,
    rule: c.rule,
    duration_ms: c.duration_ms,
    result_bytes: c.bytes_down,
    is_error: c.error !== undefined,
    ...(c.host ? { hosts: [c.host] } : {}),
    ...(c.proposal ? { proposal: c.proposal } : {}),
    connection: {
      run,
      command: command.slice(0, 200),
      host: c.host,
      port: c.port,
      ...(c.address ? { address: c.address } : {}),
      bytes_up: c.bytes_up,
      bytes_down: c.bytes_down,
      ...(c.error ? { error: c.error } : {}),
    },
  };
}

/** What the command's result says of its network: every host once, with its bytes or why it was refused. */
export function connectionNotes(cs: readonly ConnectionRecord[]): string[] {
  return cs.map((c) => {
    const where = c.host ? `${c.host}:${c.port}` : "(no host named)";
    if (c.decision === "allowed" && !c.error) return `[network: ${where} ${c.bytes_up} bytes up, ${c.bytes_down} down]`;
    if (c.decision === "staged")
      return `[network: ${where} refused until a person approves proposal ${c.proposal} (${c.rule}); once approved, re-run the command]`;
    return `[network: ${where} ${c.decision === "allowed" ? "failed" : "refused"} (${c.rule}): ${c.error ?? "refused"}]`;
  });
}
