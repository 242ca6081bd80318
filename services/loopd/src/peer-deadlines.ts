import type { BrokerService, ClientOptions, InferService } from "@boxmaker/common";
import type { GenService } from "@bufbuild/protobuf/codegenv2";

type Deadlines<S> = S extends GenService<infer T> ? Pick<ClientOptions<T>, "unaryTimeoutMs" | "methods"> : never;

/**
 * The deadline of each unary call loopd makes to brokerd and inferproxy, so a
 * peer that takes a call and never finishes it (no reply, a trickling one)
 * fails that call instead of holding a turn, a CLI request or a slot for ever.
 * A call site's own timeoutMs comes first. `defaultMs` (loopd
 * peer_call_timeout_ms) is every call that answers from memory or disk; the
 * few that do real work before they answer get a ceiling far above what that
 * work may take.
 */
export function peerDeadlines(defaultMs: number): {
  brokerd: Deadlines<typeof BrokerService>;
  inferproxy: Deadlines<typeof InferService>;
} {
  return {
    brokerd: {
      unaryTimeoutMs: defaultMs,
      methods: {
        // Runs the tool: a command up to brokerd's sandbox.timeout_ms, an MCP call up to max_total_timeout_ms.
        callTool: { timeoutMs: 6 * 60 * 60_000 },
        // An approved command runs before the answer, as callTool.
        decideProposal: { timeoutMs: 6 * 60 * 60_000 },
        // Hooks run before the answer (each under its own limit).
        runHooks: { timeoutMs: 30 * 60_000 },
        // An MCP login asks the server's authorization server (discovery, registration, the token exchange) first.
        startMcpLogin: { timeoutMs: 2 * 60_000 },
        finishMcpLogin: { timeoutMs: 2 * 60_000 },
      },
    },
    inferproxy: {
      unaryTimeoutMs: defaultMs,
      methods: {
        // Saves or restores a slot's cache file: gigabytes for a long context on a slow disk.
        slotAction: { timeoutMs: 30 * 60_000 },
      },
    },
  };
}
