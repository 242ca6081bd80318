import type { StoredMessage } from "./session-state.js";
import type { Session } from "./session.js";
import type { ToolOutcome } from "./tool-dispatch.js";

const STATUSES = ["pending", "in_progress", "done"] as const;
type PlanStatus = (typeof STATUSES)[number];

interface PlanItem {
  content: string;
  status: PlanStatus;
}

/** The ack starts with this; planOf recognises an accepted call by it. */
const ACK = "plan updated:";

/**
 * The items of an update_plan call, or why they are not a plan. brokerd's
 * schema checked them already; this is loopd not trusting that it did (an
 * operator's config could replace the schema).
 */
function planItems(args: Record<string, unknown>): PlanItem[] | string {
  const items = args.items;
  if (!Array.isArray(items) || items.length === 0) return "`items` must be a non-empty array";
  const out: PlanItem[] = [];
  for (const [i, it] of items.entries()) {
    const { content, status } = (it ?? {}) as { content?: unknown; status?: unknown };
    if (typeof content !== "string" || !content.trim()) return `item ${i + 1} needs a non-empty \`content\` string`;
    if (!STATUSES.includes(status as PlanStatus))
      return `item ${i + 1}: \`status\` must be one of ${STATUSES.join(", ")}`;
    out.push({ content: content.trim(), status: status as PlanStatus });
  }
  return out;
}

function summary(items: readonly PlanItem[]): string {
  const n = (st: PlanStatus) => items.filter((i) => i.status === st).length;
  return `${ACK} ${items.length} item${items.length === 1 ? "" : "s"} (${n("done")} done, ${n("in_progress")} in progress, ${n("pending")} pending)`;
}

/**
 * update_plan as loopd runs it: the list goes to the session's watchers and
 * the model gets a one-line ack. Nothing else is kept: the call and its ack
 * are in the log like any tool call, and planOf reads the list back from them.
 */
export function runUpdatePlan(args: Record<string, unknown>, s: Session, callId: string): ToolOutcome {
  const items = planItems(args);
  if (typeof items === "string") return { isError: true, content: `error: update_plan: ${items}` };
  s.events.publish({ case: "plan", value: { callId, items } });
  return { isError: false, content: summary(items) };
}

interface ToolCallJson {
  id?: string;
  function?: { name?: string; arguments?: string };
}

/** The list of the session's last accepted update_plan call (every epoch, so compaction does not lose it); [] when none. */
export function planOf(history: readonly StoredMessage[]): PlanItem[] {
  for (let i = history.length - 1; i >= 0; i--) {
    const m = history[i]!;
    if (!m.tool || m.tool.is_error) continue;
    const msg = JSON.parse(m.json) as { role?: string; tool_call_id?: string; content?: unknown };
    if (msg.role !== "tool" || typeof msg.content !== "string" || !msg.content.startsWith(ACK)) continue;
    const call = callOf(history, i, msg.tool_call_id ?? "");
    if (call?.function?.name !== "update_plan") continue;
    try {
      const items = planItems(JSON.parse(call.function.arguments ?? "") as Record<string, unknown>);
      if (typeof items !== "string") return items;
    } catch {
      // An accepted call's arguments parsed when it ran; a log edited since is not a plan.
    }
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
