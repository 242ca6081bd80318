/**
 * Core tools loopd runs itself. Their schemas are in brokerd's tool table
 * (the one source of the tools array); loopd intercepts calls by name.
 */
export const SPAWN_AGENT_TOOL = "spawn_agent";
export const UPDATE_PLAN_TOOL = "update_plan";
