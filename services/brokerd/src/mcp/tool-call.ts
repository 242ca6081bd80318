import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError, UrlElicitationRequiredError } from "@modelcontextprotocol/sdk/types.js";
import { messageOf } from "@boxmaker/common";
import { McpTimeout } from "../errors.js";
import type { McpServerConfig } from "../config-types.js";
import { CallClock } from "./call-clock.js";
import { cleanText } from "./clean-text.js";
import { resultToText, rpcErrorToText, type StoreBlob } from "./convert.js";
import { askBeforeRetry, type CallerOf } from "./elicitation.js";
import type { McpResult } from "./mcp-result.js";

/** What one call needs of its connection (connection.ts). */
export interface CallHost {
  readonly name: string;
  readonly config: McpServerConfig;
  /** A client that is ready now, connecting first if the server is due; undefined when it is down. */
  ready(): Promise<Client | undefined>;
  /** The client in use now: a failure of an older one does not bring the server down again. */
  current(): Client | undefined;
  markDown(why: string, retryNow?: boolean): void;
  unavailableText(): McpResult;
  /** The calls in flight, for attributing a server's question to its session. */
  readonly calls: Set<CallerOf>;
}

/** The SDK's own timeout is made unreachable: the call's CallClock keeps time (it can pause). */
const SDK_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * Runs one tool call: the call as the model made it, on the connection's
 * client, within the server's limits. A server that needs the person to finish
 * a step in a browser first (-32042) gets the person asked, and the call is
 * sent once more if they say it is done.
 */
export async function runCall(
  host: CallHost,
  tool: string,
  args: Record<string, unknown>,
  caller: Omit<CallerOf, "clock" | "tool"> | undefined,
  signal?: AbortSignal,
  store?: StoreBlob,
): Promise<McpResult | "retry"> {
  const first = await callOnce(host, tool, args, caller, signal, store);
  if (!(first instanceof UrlElicitationRequiredError)) return first;
  const asked = await askBeforeRetry(host, tool, first, caller, signal);
  if (asked !== "retry") return asked;
  const again = await callOnce(host, tool, args, caller, signal, store);
  if (again instanceof UrlElicitationRequiredError) {
    return {
      text: `MCP server "${host.name}" still refused ${tool} after the operator finished the step it asked for: ${cleanText(again.message, 300)}`,
      isError: true,
      ran: false,
    };
  }
  return again;
}

async function callOnce(
  host: CallHost,
  tool: string,
  args: Record<string, unknown>,
  caller: Omit<CallerOf, "clock" | "tool"> | undefined,
  signal?: AbortSignal,
  store?: StoreBlob,
): Promise<McpResult | "retry" | UrlElicitationRequiredError> {
  const client = await host.ready();
  if (!client) return host.unavailableText();
  const timeout = host.config.timeout_ms;
  const ceiling = Math.max(timeout, host.config.max_total_timeout_ms);
  // Progress restarts the silence limit, up to the total; neither runs while the person is asked something.
  const clock = new CallClock(timeout, ceiling);
  const inFlight: CallerOf | undefined = caller ? { ...caller, tool, clock } : undefined;
  if (inFlight) host.calls.add(inFlight);
  try {
    const call = client.callTool({ name: tool, arguments: args }, undefined, {
      timeout: SDK_TIMEOUT_MS,
      onprogress: () => clock.progress(),
      signal: signal ? AbortSignal.any([signal, clock.signal]) : clock.signal,
    });
    // The race is for a transport that swallows the request and its cancellation: it must not hold us either.
    const res = await Promise.race([call, afterAbort(clock.signal, 1000, tool)]);
    return { ...resultToText(res, store), ran: true };
  } catch (err) {
    if (err instanceof UrlElicitationRequiredError) return err;
    if (err instanceof McpError && err.code !== ErrorCode.RequestTimeout && err.code !== ErrorCode.ConnectionClosed) {
      return { ...rpcErrorToText(host.name, tool, err), ran: false };
    }
    if (signal?.aborted) throw err;
    const reached = clock.reached;
    if (reached || err instanceof McpTimeout) {
      // The SDK has sent notifications/cancelled for this request alone. Restart only a server that is really gone.
      const ok = await client.ping({ timeout: Math.min(5000, timeout) }).then(
        () => true,
        () => false,
      );
      if (!ok && host.current() === client) host.markDown(`no answer to ${tool} within ${timeout} ms, nor to a ping`);
      return {
        text:
          reached === "total"
            ? `MCP server "${host.name}" did not finish ${tool} within its total time limit of ${ceiling} ms (max_total_timeout_ms), though it kept reporting progress; the call was cancelled.`
            : `MCP server "${host.name}" did not answer ${tool} within ${timeout} ms; the call was cancelled${ok ? " (the server is alive; other calls are unaffected)" : " and the server, which no longer answers, is being restarted"}.`,
        isError: true,
        ran: false,
      };
    }
    const why = messageOf(err);
    const undelivered = sessionLost(err);
    if (host.current() === client) host.markDown(why, undelivered);
    if (undelivered) return "retry";
    return {
      text: `MCP server "${host.name}" failed during ${tool}: ${cleanText(why, 500)}. It is being reconnected.`,
      isError: true,
      ran: false,
    };
  } finally {
    clock.dispose();
    if (inFlight) host.calls.delete(inFlight);
  }
}

/** Rejects `graceMs` after `signal` aborts, with McpTimeout. */
function afterAbort(signal: AbortSignal, graceMs: number, tool: string): Promise<never> {
  return new Promise<never>((_, reject) => {
    signal.addEventListener(
      "abort",
      () => setTimeout(() => reject(new McpTimeout(`calling ${tool}`, graceMs)), graceMs).unref(),
      { once: true },
    );
  });
}

/**
 * An HTTP request that provably never reached a session: the server forgot
 * the session (404, or 400 naming the session id) or refused the connection.
 */
function sessionLost(err: unknown): boolean {
  // The SDK reports the HTTP status only; a 400 is a lost session when the server's text says so.
  if (err instanceof StreamableHTTPError) return err.code === 404 || (err.code === 400 && /session/i.test(err.message));
  // fetch fails with a TypeError whose cause is the socket error; undici's own errors carry the code.
  const e = err as { code?: unknown; cause?: { code?: unknown } };
  return e.code === "ECONNREFUSED" || e.cause?.code === "ECONNREFUSED";
}
