import { join } from "node:path";
import type { Logger } from "@boxmaker/common";
import { stackDirs } from "../boundary.js";
import type { BrokerConfig } from "../config-types.js";
import type { ToolTable } from "../tool-table.js";
import { ELICITATION_WAIT_MS, ElicitationDesk } from "./elicitation-desk.js";
import type { McpServers } from "./mcp-servers.js";
import type { McpRuntime } from "./transport.js";

export type { McpServers } from "./mcp-servers.js";

const none = (): McpServers => ({
  connections: [],
  questions: new ElicitationDesk(ELICITATION_WAIT_MS),
  start: () => undefined,
  settled: () => Promise.resolve(),
  get: () => undefined,
  prompts: () => Promise.resolve([]),
  status: () => [],
  close: () => Promise.resolve(),
});

/**
 * The MCP SDK is large once loaded (docs/benchmarks.md, "Figures behind the code"): it is imported only
 * when the config names at least one server.
 */
export async function openMcpServers(
  config: Pick<BrokerConfig, "mcp_servers" | "mcp_reconnect" | "socket" | "state_dir" | "secret_patterns">,
  table: ToolTable,
  log: Logger,
  runtime: McpRuntime,
): Promise<McpServers> {
  if (Object.keys(config.mcp_servers).length === 0) return none();
  const { McpManager } = await import("./manager.js");
  // Every server's sandbox is kept off the stack's own directories and out of secret-holding program directories.
  const full = {
    stack: stackDirs(config),
    secretPatterns: config.secret_patterns,
    questions: new ElicitationDesk(ELICITATION_WAIT_MS),
    oauthDir: join(config.state_dir, "mcp-oauth"),
    ...runtime,
  };
  return new McpManager(config.mcp_servers, config.mcp_reconnect, table, log, full);
}
