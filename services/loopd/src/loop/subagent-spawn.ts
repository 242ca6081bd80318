import { parseSpawnAgent } from "@boxmaker/common";
import type { BudgetLimits } from "./budgets.js";
import type { Parking } from "../slots/parking.js";
import type { Session } from "../sessions/session.js";
import type { ToolOutcome } from "./tool-dispatch.js";
import type { TurnResult } from "./turn-end.js";

/** What spawn_agent needs from the session runner. */
export interface SubagentHost {
  create(role: "subagent", title: string, parentId: string): Promise<Session>;
  /** A turn on the session's slot; with a lender that holds the slot, on the lender's hold. */
  runOnSlot(s: Session, text: string, limits: BudgetLimits, signal: AbortSignal, lender?: Session): Promise<TurnResult>;
  readonly parking: Pick<Parking, "arrive">;
  /** The configured budgets, read when the subagent starts. */
  budgets(): BudgetLimits;
}

/** The spawn_agent tool: a subagent session runs one turn on the task and its answer is the tool's result. */
export async function spawnAgent(
  host: SubagentHost,
  argumentsJson: string,
  parent: Session,
  signal: AbortSignal,
): Promise<ToolOutcome> {
  const parsed = parseSpawnAgent(argumentsJson);
  if (!parsed.ok) return { isError: true, content: `error: ${parsed.problem}` };
  const { task } = parsed.args;
  if (parent.state.role === "subagent") {
    // Subagents do not nest: one level keeps a turn's cost and its approvals in sight.
    return { isError: true, content: "error: a subagent cannot spawn another subagent; do the task yourself" };
  }
  const child = await host.create("subagent", task.slice(0, 80), parent.id);
  // A subagent works under its parent's mode: read-only's plan must not be done by a helper that writes.
  child.recordMode(parent.state.mode);
  const ac = new AbortController();
  const onAbort = () => ac.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  child.running = ac;
  // With fewer slots than roles (two slots: scheduled and subagent share one; one slot: all share it) the
  // child's slot may be the very slot its parent holds for this turn. The parent is waiting on the child,
  // so the slot is idle: the child runs on the parent's hold instead of queueing behind it forever.
  const lender = child.state.slot === parent.state.slot ? parent : undefined;
  try {
    const out = await host.runOnSlot(child, task, host.budgets(), ac.signal, lender);
    // The child's prompt replaced the parent's in the slot: bring the parent's back (parked) before it goes on.
    if (lender) await host.parking.arrive(lender.state.slot, lender.id, signal);
    if (out.error) return { isError: true, content: `error: subagent ${child.id} failed: ${out.error.message}` };
    if (out.finishReason === "budget" && out.breach) {
      return {
        isError: true,
        content: `subagent ${child.id} stopped at its ${out.breach.budget} budget (${out.breach.used}/${out.breach.limit}). Partial answer: ${out.finalText}`,
      };
    }
    return { isError: false, content: out.finalText || `(subagent ${child.id} gave no answer)` };
  } finally {
    child.running = undefined;
    signal.removeEventListener("abort", onAbort);
  }
}
