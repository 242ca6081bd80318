import { isAbsolute } from "node:path";
import { ConfigError } from "@boxmaker/common";
import type { BrokerConfig } from "./config-types.js";
import { loadBrokerConfig } from "./config.js";
import { checkRules } from "./policy/rule-check.js";
import type { ToolTable } from "./tool-table.js";
import { builtinTable } from "./tools/index.js";

/**
 * What brokerd holds its config to beyond the schema, without the machine:
 * every policy rule names a tool or MCP server there can be and a pattern
 * that can match, and OAuth is asked only of servers that can take it. Broker.open runs it at start; `--check-config` at build.
 */
export function checkBrokerConfig(
  config: BrokerConfig,
  table: ToolTable = builtinTable(config.extra_core_tools),
): void {
  checkRules(config.policy.rules, {
    names: [...table.core(), ...table.extended()].map((t) => t.name),
    mcpServers: Object.keys(config.mcp_servers),
  });
  for (const [name, s] of Object.entries(config.mcp_servers)) {
    if (!s.oauth) continue;
    if (s.transport !== "http")
      throw new ConfigError(
        `mcp_servers.${name}.oauth: OAuth is for http servers; a stdio server is started by brokerd`,
      );
    if (s.oauth.client_secret_file && !isAbsolute(s.oauth.client_secret_file))
      throw new ConfigError(`mcp_servers.${name}.oauth.client_secret_file must be an absolute path`);
  }
}

/** brokerd's config file as it starts on it (schema, then checkBrokerConfig). */
export function loadCheckedBrokerConfig(path: string | undefined): BrokerConfig {
  const config = loadBrokerConfig(path);
  checkBrokerConfig(config);
  return config;
}
