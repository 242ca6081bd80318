/**
 * The core tools loopd runs itself (brokerd lists them and its policy gates
 * them). Plain names with no imports, so the CLI's start-up path can read them.
 */
export const LOOP_TOOL = { spawnAgent: "spawn_agent", updatePlan: "update_plan" } as const;
