/** Hooks: the operator's commands run at points of a session (see docs/operations.md, "Hooks"). */

import { operatorHooksSchema, type HooksConfig } from "./schema.js";

export type HookEvent = keyof HooksConfig;
/** The events, in the schema's order (schema.ts declares them). */
export const HOOK_EVENTS = Object.keys(operatorHooksSchema.properties) as HookEvent[];

/** What a notification is about: the `match` subject of a notification hook. */
type NotificationKind = "approval_waiting" | "budget_ended" | "schedule_failed";

export type { HookSpec, HooksConfig } from "./schema.js";

/** Where a hook came from: brokerd's own config, or a workspace's `.boxmaker/hooks.json` (after `boxmaker hooks trust`). */
export type HookOrigin = { kind: "operator" } | { kind: "project"; file: string; root: string };

/** The JSON a hook reads on stdin; fields that do not apply to the event are absent. */
export interface HookInput {
  event: HookEvent;
  session_id: string;
  /** The workspace root the hook runs in. */
  cwd: string;
  tool?: string;
  call_id?: string;
  arguments?: unknown;
  /** post_tool: the start of the result the model got, and whether it was an error. */
  result_excerpt?: string;
  is_error?: boolean;
  notification?: { kind: NotificationKind | string; message: string };
  /** turn_end: how the turn ended (done, cancelled, budget, error). */
  stop_reason?: string;
}
