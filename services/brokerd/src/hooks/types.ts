/** Hooks: the operator's commands run at points of a session (see docs/operations.md, "Hooks"). */

export const HOOK_EVENTS = ["session_start", "pre_tool", "post_tool", "turn_end", "notification"] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** What a notification is about: the `match` subject of a notification hook. */
type NotificationKind = "approval_waiting" | "budget_ended" | "schedule_failed";

export interface HookSpec {
  /** Shown in the audit line and in the note the model reads; defaults to `<event>[i]`. */
  name?: string;
  /** `/bin/sh -c` line; the event's JSON is on its stdin. */
  command: string;
  /**
   * Tool-name globs (pre_tool, post_tool) or notification kinds (notification)
   * the hook fires for; unset: every one.
   */
  match?: string[];
  timeout_ms: number;
  /** Output beyond this is dropped (and counted in the audit line). */
  output_cap_bytes: number;
  /** Operator hooks only: run as brokerd's user outside bwrap (a push to a phone needs the network). */
  unsandboxed: boolean;
}

export type HooksConfig = Partial<Record<HookEvent, HookSpec[]>>;

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
