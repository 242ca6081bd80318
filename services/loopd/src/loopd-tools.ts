/** Core tools that loopd itself runs; they join brokerd's array once per epoch. */
export const SPAWN_AGENT_TOOL = "spawn_agent";

const spawnAgentDef = {
  type: "function",
  function: {
    name: SPAWN_AGENT_TOOL,
    description: "Run a subagent on a self-contained task; returns its final answer.",
    parameters: {
      type: "object",
      properties: { task: { type: "string", description: "The task, with all context the subagent needs." } },
      required: ["task"],
    },
  },
};

/** brokerd's tools array plus loopd's own, serialized once for the epoch. */
export function withLoopdTools(brokerToolsJson: string): string {
  const tools = JSON.parse(brokerToolsJson || "[]") as unknown[];
  return JSON.stringify([...tools, spawnAgentDef]);
}
