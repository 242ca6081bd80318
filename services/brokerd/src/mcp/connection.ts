import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ElicitRequestSchema, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { messageOf, type Logger } from "@boxmaker/common";
import type { McpServerConfig } from "../config-types.js";
import { cleanText } from "./clean-text.js";
import type { StoreBlob } from "./convert.js";
import { elicitationHandler, type CallerOf } from "./elicitation.js";
import type { McpResult } from "./mcp-result.js";
import { stopProcess } from "./stop-process.js";
import type { Refusal } from "./tool-admission.js";
import { backoffDelay, withTimeout, type Backoff } from "./timing.js";
import { runCall } from "./tool-call.js";
import { listTools, usableTools } from "./tool-list.js";
import { CredentialFile } from "./oauth-credentials.js";
import { OAuthLogin } from "./oauth-login.js";
import { openTransport, type McpRuntime } from "./transport.js";

// Which tools a server may offer is its own module; the tests of it import it from here.
export { missingFeature } from "./tool-list.js";

/** `login`: an OAuth-protected server with no usable token; nothing is retried until a person logs in. */
export type ConnectionState = "connecting" | "ready" | "down" | "login" | "closed";

/** How many refused tools a server's status names; the rest are counted. */
const NAMED_REFUSALS = 20;

interface Live {
  client: Client;
  transport: Transport;
}

/**
 * One MCP server. Failures stay inside: a server that dies, hangs or never
 * starts yields tool errors within its timeout and is reconnected in the
 * background with backoff; nothing here throws into brokerd's serving path.
 * A call that times out is cancelled alone; the server is restarted only
 * when a ping says it is really gone.
 */
export class McpConnection {
  state: ConnectionState = "down";
  lastError = "not connected yet";
  /** Tools hidden because they need a client feature Boxmaker lacks or break a limit, with why (the first few). */
  unavailable: Refusal[] = [];
  /** How many tools were refused beyond those named in `unavailable`. */
  moreUnavailable = 0;
  /** Set when the server's tool list went on past the pages brokerd follows. */
  listCut: string | undefined;
  toolCount = 0;
  private client: Client | undefined;
  private connecting: Promise<void> | undefined;
  /** Every client with a transport open, connecting or connected: close() stops them all. */
  private readonly live = new Set<Live>();
  /** Processes being stopped: close() waits for each, whoever started stopping it. */
  private readonly stopping = new Set<Promise<void>>();
  /** The calls in flight, each with its session (a server's question goes to that session's person). */
  readonly calls = new Set<CallerOf>();
  private attempt = 0;
  private nextAttemptAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private firstAttempt: Promise<void> | undefined;
  /** The OAuth login of an http server configured with `oauth`. */
  readonly login: OAuthLogin | undefined;

  constructor(
    readonly name: string,
    readonly config: McpServerConfig,
    private readonly backoff: Backoff,
    private readonly log: Logger,
    /** Called with the server's tool list after every successful connect. */
    private readonly onTools: (tools: Tool[], client: Client) => void,
    private readonly runtime: McpRuntime = { roots: [] },
  ) {
    if (config.transport === "http" && config.oauth && runtime.oauthDir)
      this.login = new OAuthLogin(name, config.url, config.oauth, new CredentialFile(runtime.oauthDir, name));
  }

  /** Resolves once the first connect attempt has ended, either way. */
  settled(): Promise<void> {
    return this.firstAttempt ?? this.connect();
  }

  /** Connects now (or joins a connect in progress); never rejects. */
  connect(): Promise<void> {
    if (this.state === "closed") return Promise.resolve();
    this.connecting ??= this.doConnect().finally(() => (this.connecting = undefined));
    this.firstAttempt ??= this.connecting;
    return this.connecting;
  }

  private async doConnect(): Promise<void> {
    clearTimeout(this.timer);
    this.state = "connecting";
    // Elicitation: a server may ask the person (never the model) during a call; see elicitation.ts.
    const client = new Client(
      { name: "boxmaker-brokerd", version: "0.1.0" },
      { capabilities: this.runtime.questions ? { elicitation: { form: {}, url: {} } } : {} },
    );
    if (this.runtime.questions) {
      client.setRequestHandler(
        ElicitRequestSchema,
        elicitationHandler(this.name, this.calls, this.runtime.questions, this.log),
      );
    }
    let live: Live | undefined;
    try {
      const timeout = this.config.connect_timeout_ms;
      const transport = openTransport(this.name, this.config, this.runtime, this.log, this.login);
      live = { client, transport };
      this.live.add(live);
      await withTimeout(client.connect(transport, { timeout }), timeout, "connecting");
      const { listed, cut } = await listTools(client, timeout);
      if (this.closed) {
        await this.stop(live);
        return;
      }
      const l = live;
      client.onclose = () => {
        this.live.delete(l);
        if (this.client === client) this.markDown("the connection closed");
      };
      this.client = client;
      this.state = "ready";
      this.attempt = 0;
      const { tools: usable, refused } = usableTools(listed);
      this.unavailable = refused.slice(0, NAMED_REFUSALS);
      this.moreUnavailable = refused.length - this.unavailable.length;
      this.listCut = cut;
      this.toolCount = usable.length;
      this.log.info({ mcp: this.name, tools: usable.length, hidden: refused.length }, "mcp server connected");
      // A list cut short is said where the person looks first, not only in BrokerStatus.
      if (cut) this.log.warn({ mcp: this.name, tools: usable.length, why: cut }, "mcp server's tool list cut short");
      this.onTools(usable, client);
    } catch (err) {
      if (live) await this.stop(live);
      if (this.closed) return;
      if (this.login && err instanceof UnauthorizedError) this.needsLogin();
      else this.markDown(messageOf(err));
    }
  }

  /** Closes one client and makes sure its process is gone; close() waits for it too. */
  private stop(l: Live): Promise<void> {
    this.live.delete(l);
    const pid = l.transport instanceof StdioClientTransport ? l.transport.pid : null;
    // The SDK's close waits up to 4 s for a polite exit; we escalate on our own clock.
    const closing = l.client.close().catch(() => undefined);
    const done = (async () => {
      if (pid) await stopProcess(pid);
      await withTimeout(closing, 500, "closing").catch(() => undefined);
    })();
    this.stopping.add(done);
    void done.finally(() => this.stopping.delete(done));
    return done;
  }

  /** Drops the connection (killing a stdio child) and schedules the next attempt. */
  markDown(why: string, retryNow = false): void {
    if (this.state === "closed") return;
    const old = this.client;
    this.client = undefined;
    this.state = "down";
    this.lastError = cleanText(why, 500);
    if (old) for (const l of this.live) if (l.client === old) void this.stop(l);
    const delay = retryNow ? 0 : backoffDelay(this.backoff, this.attempt++);
    this.nextAttemptAt = Date.now() + delay;
    this.log.warn({ mcp: this.name, why, retryInMs: delay }, "mcp server down");
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.connect(), delay);
    this.timer.unref();
  }

  /** No token the server takes: wait for `boxmaker mcp login`, which connects again when it is done. */
  private needsLogin(): void {
    this.state = "login";
    this.lastError = `needs a person to log in: boxmaker mcp login ${this.name}`;
    clearTimeout(this.timer);
    this.log.warn({ mcp: this.name }, "mcp server needs an OAuth login");
  }

  // A getter, so TypeScript does not narrow `state` across the awaits in doConnect.
  private get closed(): boolean {
    return this.state === "closed";
  }

  /** This server as `status` shows it: its state and why, or its tools and what of them is hidden. */
  statusLine(): string {
    if (this.state === "login") return `${this.name}: needs login (boxmaker mcp login ${this.name})`;
    if (this.state !== "ready") return `${this.name}: ${this.state} (${this.lastError})`;
    const more = this.moreUnavailable ? ` and ${this.moreUnavailable} more` : "";
    const hidden = this.unavailable.length
      ? `; unavailable: ${this.unavailable.map((u) => `${u.tool} (${u.why})`).join(", ")}${more}`
      : "";
    const cut = this.listCut ? `; ${this.listCut}` : "";
    return `${this.name}: ready (${this.toolCount} tools${hidden}${cut})`;
  }

  /** After a login: connect now if the server was waiting for one (a ready one takes the new token on its next request). */
  async loggedIn(): Promise<void> {
    if (this.state === "login" || this.state === "down") {
      clearTimeout(this.timer);
      await this.connect();
    }
  }

  /** After a logout: the connection goes, and the server waits for the next login. */
  loggedOut(): void {
    if (this.state === "closed") return;
    const old = this.client;
    this.client = undefined;
    for (const l of this.live) if (l.client === old) void this.stop(l);
    this.needsLogin();
  }

  /** The client in use now (CallHost). */
  current(): Client | undefined {
    return this.client;
  }

  /** For CallHost: where a refused call's pages are put to the person. */
  get desk() {
    return this.runtime.questions;
  }

  unavailableText(): McpResult {
    if (this.state === "login")
      return {
        text: `MCP server "${this.name}" is unavailable until a person logs Boxmaker in to it (boxmaker mcp login ${this.name}). Use another tool, or tell the person.`,
        isError: true,
        ran: false,
      };
    const wait = Math.max(0, this.nextAttemptAt - Date.now());
    return {
      text: `MCP server "${this.name}" is unavailable (${this.lastError}); brokerd reconnects in about ${Math.ceil(wait / 1000)} s. Try again later or use another tool.`,
      isError: true,
      ran: false,
    };
  }

  /** A client that is ready now, connecting first if the server is due. */
  async ready(): Promise<Client | undefined> {
    if (this.state === "connecting") await this.connect();
    else if (this.state === "down" && Date.now() >= this.nextAttemptAt) await this.connect();
    return this.state === "ready" ? this.client : undefined;
  }

  async call(
    tool: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
    store?: StoreBlob,
    caller?: { session: string; callId: string },
  ): Promise<McpResult> {
    const r = await runCall(this, tool, args, caller, signal, store);
    if (r !== "retry") return r;
    // The request never reached a live session (an HTTP server restarted): re-initialise and send it once more.
    const again = await runCall(this, tool, args, caller, signal, store);
    return again === "retry" ? this.unavailableText() : again;
  }

  /** The pids of this server's processes (bwrap's when sandboxed), for tests and diagnosis. */
  pids(): number[] {
    return [...this.live].flatMap((l) =>
      l.transport instanceof StdioClientTransport && l.transport.pid ? [l.transport.pid] : [],
    );
  }

  /**
   * Stops every process of this server, those already being stopped (a
   * restart, a failed connect) included, so brokerd never exits with one
   * still running: each ends with SIGKILL if SIGTERM did not stop it.
   */
  async close(): Promise<void> {
    this.state = "closed";
    clearTimeout(this.timer);
    this.client = undefined;
    for (const l of [...this.live]) void this.stop(l);
    await Promise.all([...this.stopping]);
  }
}
