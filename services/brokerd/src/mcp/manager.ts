import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { type Logger, StringEnum, Type } from "@boxmaker/common";
import type { BrokerConfig, McpServerConfig, Risk } from "../config-types.js";
import type { ResolvedPath } from "../policy/paths.js";
import { ToolError } from "../errors.js";
import type { PlannedTool, ToolTable } from "../tool-table.js";
import { defineTool } from "../tools/define-tool.js";
import { McpConnection } from "./connection.js";
import { ELICITATION_WAIT_MS, ElicitationDesk } from "./elicitation-desk.js";
import type { McpPromptInfo, McpServers } from "./mcp-servers.js";
import type { McpRuntime } from "./transport.js";
import { cleanText } from "./clean-text.js";
import { binaryToText, noticingStore } from "./convert.js";
import { TOOL_LIMITS } from "./tool-admission.js";
import { messageOf } from "@boxmaker/common";

/** Argument names that hold paths in filesystem-like servers, checked when a tool's schema has them. */
const DEFAULT_PATH_ARGS = ["path", "paths", "source", "destination", "file", "directory"];

/**
 * Policy's view of one tool: the operator's per-tool override, else the
 * server's annotations (hints the operator trusted by configuring the
 * server), else the server-wide risk.
 */
export function toolRisk(cfg: McpServerConfig, tool: Tool): Risk {
  const override = cfg.tools[tool.name]?.risk;
  if (override) return override;
  const a = tool.annotations ?? {};
  if (a.destructiveHint === true && a.readOnlyHint !== true) return "write";
  if (a.readOnlyHint === true) return a.openWorldHint === true ? "network" : "read";
  if (a.openWorldHint === true) return "network";
  if (a.readOnlyHint === false) return "write";
  return cfg.risk;
}

/** The arguments of `tool` that name paths: configured per tool or server, else the default names its schema has. */
export function pathArgs(cfg: McpServerConfig, tool: Tool): string[] {
  const configured = cfg.tools[tool.name]?.path_args ?? cfg.path_args;
  if (configured) return configured;
  const props = tool.inputSchema.properties ? Object.keys(tool.inputSchema.properties) : [];
  return DEFAULT_PATH_ARGS.filter((p) => props.includes(p));
}

/** An MCP tool as a table entry `server.tool`: extended only, so the tools array never moves. */
function mcpToolDef(server: string, cfg: McpServerConfig, tool: Tool, conn: McpConnection): PlannedTool {
  const name = `${server}.${tool.name}`;
  const hosts = [...(cfg.transport === "http" && cfg.url ? [new URL(cfg.url).hostname] : []), ...cfg.hosts];
  const risk = toolRisk(cfg, tool);
  const pathNames = pathArgs(cfg, tool);
  return defineTool({
    name,
    description: (tool.description ?? tool.title ?? "").trim() || `${tool.name} from MCP server ${server}`,
    // The server's schema as it sent it: its arguments are known to be an object, no more.
    parameters: Type.Unsafe<Record<string, unknown>>(tool.inputSchema),
    risk,
    core: false,
    kind: "mcp",
    origin: `mcp:${server}`,
    plan(raw, ctx) {
      // Path arguments go through the same guard as built-in tools' paths, and on to the server resolved.
      const args = { ...raw };
      const paths: ResolvedPath[] = [];
      const resolve = (v: unknown, arg: string): string => {
        if (typeof v !== "string") throw new ToolError(`${arg} must be a path string`);
        const r = ctx.guard.resolve(v, { write: risk === "write" });
        paths.push(r);
        return r.abs;
      };
      for (const arg of pathNames) {
        const v = args[arg];
        if (v === undefined || v === null) continue;
        args[arg] = Array.isArray(v) ? v.map((x) => resolve(x, arg)) : resolve(v, arg);
      }
      return {
        paths,
        hosts,
        preview: `${name} ${JSON.stringify(args, null, 1)}`,
        checks: { tool: name, arguments: JSON.stringify(args) },
        execute: () => conn.call(tool.name, args, ctx.signal, (text) => ctx.blobs.put(text), ctx.call),
      };
    },
  });
}

export class McpManager implements McpServers {
  readonly connections: McpConnection[] = [];
  /** Each server's connected client, for resources and prompts. */
  readonly clients = new Map<string, Client>();
  readonly questions: ElicitationDesk;

  constructor(
    servers: BrokerConfig["mcp_servers"],
    backoff: BrokerConfig["mcp_reconnect"],
    table: ToolTable,
    log: Logger,
    runtime: McpRuntime = { roots: [] },
  ) {
    this.questions = runtime.questions ?? new ElicitationDesk(ELICITATION_WAIT_MS);
    const withQuestions: McpRuntime = { ...runtime, questions: this.questions };
    for (const name of Object.keys(servers).sort()) {
      const cfg = servers[name]!;
      const conn: McpConnection = new McpConnection(
        name,
        cfg,
        backoff,
        log,
        (tools, client) => {
          this.clients.set(name, client);
          table.replaceOrigin(
            `mcp:${name}`,
            tools.filter((t) => !cfg.tools[t.name]?.hidden).map((t) => mcpToolDef(name, cfg, t, conn)),
          );
        },
        withQuestions,
      );
      this.connections.push(conn);
    }
    if (this.connections.length) for (const d of this.resourceTools(servers)) table.add(d);
  }

  /** Resources are reached through two extended tools; each call names its server. */
  private resourceTools(servers: BrokerConfig["mcp_servers"]): PlannedTool[] {
    const names = this.connections.map((c) => c.name);
    const serverParam = StringEnum(names, { description: "The MCP server offering the resource" });
    const hostsOf = (server: string) => {
      const cfg = servers[server];
      return cfg ? [...(cfg.transport === "http" && cfg.url ? [new URL(cfg.url).hostname] : []), ...cfg.hosts] : [];
    };
    const client = async (server: string) => {
      const conn = this.get(server);
      const c = conn && (await conn.ready());
      if (!conn || !c)
        throw new ToolError(`MCP server "${server}" is not available${conn ? ` (${conn.lastError})` : ""}`);
      if (!c.getServerCapabilities()?.resources) throw new ToolError(`MCP server "${server}" offers no resources`);
      return { c, timeout: servers[server]!.timeout_ms };
    };
    const common = { core: false, kind: "mcp" as const, origin: "mcp", risk: "read" as const };
    return [
      defineTool({
        ...common,
        name: "list_resources",
        description:
          "List the resources (documents, files, data) an MCP server offers, with their URIs for read_resource",
        parameters: Type.Object(
          { server: serverParam, cursor: Type.Optional(Type.String()) },
          { additionalProperties: false },
        ),
        plan: (args) => ({
          paths: [],
          hosts: hostsOf(args.server),
          execute: async () => {
            const { c, timeout } = await client(args.server);
            const page = await c.listResources(args.cursor ? { cursor: args.cursor } : undefined, { timeout });
            // A server's strings, cleaned as its tools' are: the model reads them and a terminal may show them.
            const lines = page.resources.map(
              (r) =>
                `${cleanText(r.uri, 2048)}  ${cleanText(r.name, 256)}${r.mimeType ? ` (${cleanText(r.mimeType, 128)})` : ""}${r.description ? ` — ${cleanText(r.description, 1024)}` : ""}`,
            );
            if (page.nextCursor)
              lines.push(`[more: call again with "cursor": ${JSON.stringify(cleanText(page.nextCursor, 1024))}]`);
            return {
              text: lines.length ? lines.join("\n") : `MCP server "${args.server}" lists no resources.`,
              isError: false,
            };
          },
        }),
      }),
      defineTool({
        ...common,
        name: "read_resource",
        description:
          "Read a resource from an MCP server by its URI (text as is; binary stored as a blob with a pointer)",
        parameters: Type.Object(
          {
            server: serverParam,
            uri: Type.String({ description: "The resource URI, e.g. from list_resources or a resource link" }),
          },
          { additionalProperties: false },
        ),
        plan: (args, ctx) => ({
          paths: [],
          hosts: hostsOf(args.server),
          preview: `read_resource ${args.server} ${args.uri}`,
          execute: async () => {
            const { c, timeout } = await client(args.server);
            const res = await c.readResource({ uri: args.uri }, { timeout });
            const noticed = noticingStore((t) => ctx.blobs.put(t));
            const parts = res.contents.map((r) =>
              "text" in r && typeof r.text === "string"
                ? r.text
                : binaryToText("resource", r.mimeType, (r as { blob?: string }).blob, noticed.store, r.uri),
            );
            return {
              text: parts.join("\n") || "(the resource is empty)",
              isError: false,
              discloses: noticed.discloses(),
            };
          },
        }),
      }),
    ];
  }

  /**
   * Starts every server's first connect in the background: brokerd serves
   * without waiting, and a server's tools become findable when it is up.
   */
  start(): void {
    for (const c of this.connections) void c.connect();
  }

  /** Resolves when every server's first attempt has ended (tests, `--wait`). */
  settled(): Promise<void> {
    return Promise.all(this.connections.map((c) => c.settled())).then(() => undefined);
  }

  get(name: string): McpConnection | undefined {
    return this.connections.find((c) => c.name === name);
  }

  /**
   * The prompt templates every ready server offers, for the operator (`boxmaker
   * tools --prompts`). A server that fails to answer is listed by its error
   * instead of failing the whole listing.
   */
  async prompts(signal: AbortSignal): Promise<McpPromptInfo[]> {
    const per = await Promise.all(
      this.connections.map(async (conn): Promise<McpPromptInfo[]> => {
        const c = conn.state === "ready" ? this.clients.get(conn.name) : undefined;
        if (!c?.getServerCapabilities()?.prompts) return [];
        try {
          const out: McpPromptInfo[] = [];
          let cursor: string | undefined;
          let pages = 0;
          do {
            const page = await c.listPrompts(cursor ? { cursor } : undefined, { signal, timeout: 10_000 });
            for (const p of page.prompts) {
              // Shown in the operator's terminal (`boxmaker tools --prompts`): cleaned like tool names.
              out.push({
                server: conn.name,
                name: cleanText(p.name, 128),
                description: cleanText(p.description, 4096),
                arguments: (p.arguments ?? []).map((a) => ({
                  name: cleanText(a.name, 128),
                  description: cleanText(a.description, 1024),
                  required: !!a.required,
                })),
              });
            }
            cursor = page.nextCursor;
          } while (cursor && out.length < 1000 && ++pages < TOOL_LIMITS.pages);
          return out;
        } catch (err) {
          return [
            {
              server: conn.name,
              name: "",
              description: `prompts/list failed: ${cleanText(messageOf(err), 500)}`,
              arguments: [],
            },
          ];
        }
      }),
    );
    return per.flat();
  }

  status(): string[] {
    return this.connections.map((c) => c.statusLine());
  }

  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }
}
