import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "@boxmaker/common";
import type { BrokerConfig, McpServerConfig } from "../config.js";
import type { ToolDef, ToolTable } from "../tool-table.js";
import { McpConnection } from "./connection.js";

/** An MCP tool as a table entry `server.tool`: extended only, so the tools array never moves. */
export function mcpToolDef(server: string, cfg: McpServerConfig, tool: Tool, conn: McpConnection): ToolDef {
  const name = `${server}.${tool.name}`;
  const hosts = cfg.transport === "http" && cfg.url ? [new URL(cfg.url).hostname] : [];
  return {
    name,
    description: (tool.description ?? tool.title ?? "").trim() || `${tool.name} from MCP server ${server}`,
    parameters: tool.inputSchema as Record<string, unknown>,
    risk: cfg.risk,
    core: false,
    kind: "mcp",
    origin: `mcp:${server}`,
    plan(args: Record<string, unknown>, ctx) {
      return {
        paths: [],
        hosts,
        preview: `${name} ${JSON.stringify(args, null, 1)}`,
        checks: { tool: name, arguments: JSON.stringify(args) },
        execute: () => conn.call(tool.name, args, ctx.signal),
      };
    },
  };
}

export class McpManager {
  readonly connections: McpConnection[] = [];

  constructor(
    servers: BrokerConfig["mcp_servers"],
    backoff: BrokerConfig["mcp_reconnect"],
    table: ToolTable,
    log: Logger,
  ) {
    for (const name of Object.keys(servers).sort()) {
      const cfg = servers[name]!;
      const conn: McpConnection = new McpConnection(name, cfg, backoff, log, (tools) =>
        table.replaceOrigin(
          `mcp:${name}`,
          tools.map((t) => mcpToolDef(name, cfg, t, conn)),
        ),
      );
      this.connections.push(conn);
    }
  }

  /** First connect of every server, in parallel; each is bounded by its own timeout and never rejects. */
  start(): Promise<void> {
    return Promise.all(this.connections.map((c) => c.connect())).then(() => undefined);
  }

  status(): string[] {
    return this.connections.map((c) => `${c.name}: ${c.state}${c.state === "ready" ? "" : ` (${c.lastError})`}`);
  }

  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }
}
