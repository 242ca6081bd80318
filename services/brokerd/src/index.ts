export { Broker, type CallRequest, type CallOutcome, type CallDecision } from "./broker.js";
export {
  brokerConfigSchema,
  loadBrokerConfig,
  parseBrokerConfig,
  type BrokerConfig,
  type PolicyRule,
} from "./config.js";
export { brokerService } from "./service.js";
export { ToolTable, type ToolDef, type ToolText } from "./tool-table.js";
export { buildToolsArray, stableStringify } from "./tools-array.js";
export { ToolIndex } from "./find-tool.js";
export { decide } from "./policy/rules.js";
