import type { Logger } from "@boxmaker/common";
import { stackDirs } from "../boundary.js";
import type { BrokerConfig } from "../config-types.js";
import type { ToolTable } from "../tool-table.js";
import type { McpConnection } from "./connection.js";
import type { McpRuntime } from "./transport.js";

export interface McpPromptInfo {
  server: string;
  name: string;
  description: string;
  arguments: Array<{ name: string; description: string; required: boolean }>;
}

/** The configured MCP servers, as the broker uses them (McpManager when there are any). */
export interface McpServers {
  readonly connections: readonly McpConnection[];
  start(): void;
  settled(): Promise<void>;
  get(name: string): McpConnection | undefined;
  prompts(signal: AbortSignal): Promise<McpPromptInfo[]>;
  status(): string[];
  close(): Promise<void>;
}

const NONE: McpServers = {
  connections: [],
  start: () => undefined,
  settled: () => Promise.resolve(),
  get: () => undefined,
  prompts: () => Promise.resolve([]),
  status: () => [],
  close: () => Promise.resolve(),
};

/**
 * The MCP SDK costs about 28 MB resident once loaded: it is imported only
 * when the config names at least one server.
 */
export async function openMcpServers(
  config: Pick<BrokerConfig, "mcp_servers" | "mcp_reconnect" | "socket" | "state_dir" | "secret_patterns">,
  table: ToolTable,
  log: Logger,
  runtime: McpRuntime,
): Promise<McpServers> {
  if (Object.keys(config.mcp_servers).length === 0) return NONE;
  const { McpManager } = await import("./manager.js");
  // Every server's sandbox is kept off the stack's own directories and out of secret-holding program directories.
  const full = { stack: stackDirs(config), secretPatterns: config.secret_patterns, ...runtime };
  return new McpManager(config.mcp_servers, config.mcp_reconnect, table, log, full);
}
