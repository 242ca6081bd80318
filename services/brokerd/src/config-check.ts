import type { BrokerConfig } from "./config-types.js";
import { loadBrokerConfig } from "./config.js";
import { checkRules } from "./policy/rule-check.js";
import type { ToolTable } from "./tool-table.js";
import { builtinTable } from "./tools/index.js";

/**
 * What brokerd holds its config to beyond the schema, without the machine:
 * every policy rule names a tool or MCP server there can be and a pattern
 * that can match. Broker.open runs it at start; `--check-config` at build.
 */
export function checkBrokerConfig(
  config: BrokerConfig,
  table: ToolTable = builtinTable(config.extra_core_tools),
): void {
  checkRules(config.policy.rules, {
    names: [...table.core(), ...table.extended()].map((t) => t.name),
    mcpServers: Object.keys(config.mcp_servers),
  });
}

/** brokerd's config file as it starts on it (schema, then checkBrokerConfig). */
export function loadCheckedBrokerConfig(path: string | undefined): BrokerConfig {
  const config = loadBrokerConfig(path);
  checkBrokerConfig(config);
  return config;
}
