import { LOOP_TOOL, parseUpdatePlan, type UpdatePlanItem } from "@boxmaker/common";
import type { StoredMessage } from "../sessions/session-state.js";
import type { Session } from "../sessions/session.js";
import type { ToolOutcome } from "./tool-dispatch.js";

/** The ack starts with this; planOf recognises an accepted call by it. */
const ACK = "plan updated:";

function summary(items: readonly UpdatePlanItem[]): string {
  const n = (st: UpdatePlanItem["status"]) => items.filter((i) => i.status === st).length;
  return `${ACK} ${items.length} item${items.length === 1 ? "" : "s"} (${n("done")} done, ${n("in_progress")} in progress, ${n("pending")} pending)`;
}

/**
 * update_plan as loopd runs it: the list goes to the session's watchers and
 * the model gets a one-line ack. Nothing else is kept: the call and its ack
 * are in the log like any tool call, and planOf reads the list back from them.
 */
export function runUpdatePlan(argumentsJson: string, s: Session, callId: string): ToolOutcome {
  const parsed = parseUpdatePlan(argumentsJson);
  if (!parsed.ok) return { isError: true, content: `error: ${parsed.problem}` };
  const { items } = parsed.args;
  s.events.publish({ case: "plan", value: { callId, items } });
  return { isError: false, content: summary(items) };
}

interface ToolCallJson {
  id?: string;
  function?: { name?: string; arguments?: string };
}

/** The list of the session's last accepted update_plan call (every epoch, so compaction does not lose it); [] when none. */
export function planOf(history: readonly StoredMessage[]): UpdatePlanItem[] {
  for (let i = history.length - 1; i >= 0; i--) {
    const m = history[i]!;
    if (!m.tool || m.tool.is_error) continue;
    const msg = JSON.parse(m.json) as { role?: string; tool_call_id?: string; content?: unknown };
    if (msg.role !== "tool" || typeof msg.content !== "string" || !msg.content.startsWith(ACK)) continue;
    const call = callOf(history, i, msg.tool_call_id ?? "");
    if (call?.function?.name !== LOOP_TOOL.updatePlan) continue;
    // An accepted call's arguments parsed when it ran; a log edited since is not a plan.
    const parsed = parseUpdatePlan(call.function.arguments ?? "");
    if (parsed.ok) return parsed.args.items;
  }
  return [];
}

function callOf(history: readonly StoredMessage[], before: number, id: string): ToolCallJson | undefined {
  for (let j = before - 1; j >= 0; j--) {
    const msg = JSON.parse(history[j]!.json) as { role?: string; tool_calls?: ToolCallJson[] };
    if (msg.role === "assistant") return msg.tool_calls?.find((c) => c.id === id);
  }
  return undefined;
}
