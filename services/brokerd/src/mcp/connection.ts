import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "@boxmaker/common";
import type { McpServerConfig } from "../config.js";
import type { ToolText } from "../tool-table.js";
import { resultToText, rpcErrorToText } from "./convert.js";

export type ConnectionState = "connecting" | "ready" | "down" | "closed";

export interface Backoff {
  initial_ms: number;
  max_ms: number;
}

/** The delay before reconnect attempt `n` (0-based): doubling, capped. */
export function backoffDelay(b: Backoff, attempt: number): number {
  return Math.min(b.max_ms, b.initial_ms * 2 ** Math.min(attempt, 30));
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      t = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(t));
}

/**
 * One MCP server. Failures stay inside: a server that dies, hangs or never
 * starts yields tool errors within its timeout and is reconnected in the
 * background with backoff; nothing here throws into brokerd's serving path.
 */
export class McpConnection {
  state: ConnectionState = "down";
  lastError = "not connected yet";
  private client: Client | undefined;
  private connecting: Promise<void> | undefined;
  private attempt = 0;
  private nextAttemptAt = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly name: string,
    private readonly config: McpServerConfig,
    private readonly backoff: Backoff,
    private readonly log: Logger,
    /** Called with the server's tool list after every successful connect. */
    private readonly onTools: (tools: Tool[]) => void,
  ) {}

  /** Connects now (or joins a connect in progress); never rejects. */
  connect(): Promise<void> {
    if (this.state === "closed") return Promise.resolve();
    this.connecting ??= this.doConnect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private transport() {
    const c = this.config;
    if (c.transport === "stdio") {
      const t = new StdioClientTransport({
        command: c.command!,
        args: c.args,
        env: { ...getDefaultEnvironment(), ...c.env },
        ...(c.cwd ? { cwd: c.cwd } : {}),
        stderr: "pipe",
      });
      // Drained so a chatty server cannot block on a full pipe; kept for diagnosis.
      t.stderr?.on("data", (d: Buffer) => this.log.debug({ mcp: this.name, stderr: d.toString().trimEnd() }, "mcp stderr"));
      return t;
    }
    return new StreamableHTTPClientTransport(new URL(c.url!), { requestInit: { headers: c.headers } });
  }

  private async doConnect(): Promise<void> {
    clearTimeout(this.timer);
    this.state = "connecting";
    const client = new Client({ name: "boxmaker-brokerd", version: "0.1.0" }, { capabilities: {} });
    try {
      const timeout = this.config.timeout_ms;
      await withTimeout(client.connect(this.transport(), { timeout }), timeout, "connecting");
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { timeout });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      if (this.closed) {
        await client.close().catch(() => undefined);
        return;
      }
      client.onclose = () => {
        if (this.client === client) this.markDown("the connection closed");
      };
      this.client = client;
      this.state = "ready";
      this.attempt = 0;
      this.log.info({ mcp: this.name, tools: tools.length }, "mcp server connected");
      this.onTools(tools);
    } catch (err) {
      await client.close().catch(() => undefined);
      if (!this.closed) this.markDown((err as Error).message);
    }
  }

  /** Drops the connection (killing a stdio child) and schedules the next attempt. */
  private markDown(why: string): void {
    if (this.state === "closed") return;
    const old = this.client;
    this.client = undefined;
    this.state = "down";
    this.lastError = why;
    if (old) void old.close().catch(() => undefined);
    const delay = backoffDelay(this.backoff, this.attempt++);
    this.nextAttemptAt = Date.now() + delay;
    this.log.warn({ mcp: this.name, why, retryInMs: delay }, "mcp server down");
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.connect(), delay);
    this.timer.unref();
  }

  // A getter, so TypeScript does not narrow `state` across the awaits in doConnect.
  private get closed(): boolean {
    return this.state === "closed";
  }

  private unavailable(): ToolText {
    const wait = Math.max(0, this.nextAttemptAt - Date.now());
    return {
      text: `MCP server "${this.name}" is unavailable (${this.lastError}); brokerd reconnects in about ${Math.ceil(wait / 1000)} s. Try again later or use another tool.`,
      isError: true,
    };
  }

  async call(tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolText> {
    if (this.state === "connecting") await this.connect();
    else if (this.state === "down" && Date.now() >= this.nextAttemptAt) await this.connect();
    const client = this.client;
    if (this.state !== "ready" || !client) return this.unavailable();
    const timeout = this.config.timeout_ms;
    try {
      // The SDK's own timeout, plus a race: a transport that swallows the request must not hold us either.
      const res = await withTimeout(
        client.callTool({ name: tool, arguments: args }, undefined, { timeout, ...(signal ? { signal } : {}) }),
        timeout + 50,
        `calling ${tool}`,
      );
      return resultToText(res);
    } catch (err) {
      if (err instanceof McpError && err.code !== ErrorCode.RequestTimeout && err.code !== ErrorCode.ConnectionClosed) {
        return rpcErrorToText(this.name, tool, err);
      }
      if (signal?.aborted) throw err;
      const hung = err instanceof McpError ? err.code === ErrorCode.RequestTimeout : /longer than/.test((err as Error).message);
      // A server that hung once is not trusted with the next call: restart it.
      if (this.client === client) this.markDown(hung ? `no answer within ${timeout} ms` : (err as Error).message);
      return {
        text: hung
          ? `MCP server "${this.name}" did not answer ${tool} within ${timeout} ms; the call was abandoned and the server is being restarted.`
          : `MCP server "${this.name}" failed during ${tool}: ${(err as Error).message}. It is being reconnected.`,
        isError: true,
      };
    }
  }

  async close(): Promise<void> {
    this.state = "closed";
    clearTimeout(this.timer);
    const c = this.client;
    this.client = undefined;
    await c?.close().catch(() => undefined);
  }
}
