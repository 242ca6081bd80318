import { backoffDelay as stackBackoff } from "@boxmaker/common";
import { McpTimeout } from "../errors.js";

/** How long to wait before reconnecting a server that went down. */
export interface Backoff {
  initial_ms: number;
  max_ms: number;
}

/** The delay before reconnect attempt `n` (0-based): the stack's one backoff, doubling and capped. */
export function backoffDelay(b: Backoff, attempt: number): number {
  return stackBackoff({ initialMs: b.initial_ms, maxMs: b.max_ms }, attempt);
}

/** Rejects with McpTimeout after `ms`: a step the SDK would wait on longer must not hold a call. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      t = setTimeout(() => reject(new McpTimeout(what, ms)), ms);
    }),
  ]).finally(() => clearTimeout(t));
}
