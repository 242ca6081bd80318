import type { Static } from "@boxmaker/common";
import type { brokerConfigSchema } from "./config.js";

/**
 * brokerd's settings as the code sees them, after the schema (config.ts)
 * filled every default: its static type and the parts the code passes
 * around, named. Nothing here is written out, so nothing can drift from
 * what ajv enforces.
 */
export type BrokerConfig = Static<typeof brokerConfigSchema>;

export type Effect = BrokerConfig["policy"]["defaults"]["read"];
export type Risk = keyof BrokerConfig["policy"]["defaults"];
export type PolicyRule = BrokerConfig["policy"]["rules"][number];
/** `command` is there for stdio, `url` for http: the schema's if/then/else, as a union on `transport`. */
export type McpServerConfig = BrokerConfig["mcp_servers"][string];
export type ExtraCoreTool = BrokerConfig["extra_core_tools"][number];
export type SandboxLimits = BrokerConfig["sandbox"]["limits"];
export type NetProxyConfig = BrokerConfig["sandbox"]["net_proxy"];
export type SecretAllowEntry = BrokerConfig["secrets"]["allow"][number];
