/** One connection a command opened through the proxy, as the audit trail and the command's result tell it. */
export interface ConnectionRecord {
  /** Canonical; empty when the client never got as far as naming one. */
  host: string;
  port: number;
  /** The address connected to (after the operator's mapping or DNS). */
  address?: string;
  /** staged: refused, and put to a person as a network proposal. */
  decision: "allowed" | "denied" | "staged";
  rule: string;
  /** Client to server, after the proxy's handshake (a forwarded request's head included), and back. */
  bytes_up: number;
  bytes_down: number;
  duration_ms: number;
  /** Why it was refused or failed, as the client was told. */
  error?: string;
  /** The network proposal it staged, waits on, was refused by, or was allowed by (a person's grant). */
  proposal?: string;
}
