export { Broker } from "./broker.js";
export type { CallRequest, CallOutcome } from "./call-outcome.js";
export { brokerConfigSchema, loadBrokerConfig, parseBrokerConfig } from "./config.js";
export type { BrokerConfig, PolicyRule } from "./config-types.js";
export { brokerService } from "./service.js";
export { ToolTable, type ToolDef, type ToolText } from "./tool-table.js";
export { buildToolsArray, stableStringify } from "./tools-array.js";
export { ToolIndex } from "./find-tool.js";
export { decide } from "./policy/rules.js";
