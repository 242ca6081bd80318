import type { Logger } from "@boxmaker/common";
import type { Checkpoints } from "./checkpoints.js";
import type { Plan } from "./tool-table.js";

export interface ChangeOwner {
  session: string;
  callId: string;
  tool: string;
  /** "" for a call that ran without a person's approval. */
  proposalId: string;
}

/** Keeps an applied write's before and after content, so a person can undo it (`boxmaker undo`). */
export function keepChange(checkpoints: Checkpoints, log: Logger, plan: Plan, who: ChangeOwner): void {
  const c = plan.change;
  if (!c) return;
  try {
    const rec = checkpoints.record(
      {
        session_id: who.session,
        call_id: who.callId,
        tool: who.tool,
        proposal_id: who.proposalId,
        root: c.path.root,
        rel: c.path.rel,
        abs: c.path.abs,
      },
      c.before,
      c.after,
    );
    log.info({ session: who.session, change: rec.id, path: c.path.rel }, "checkpoint kept");
  } catch (err) {
    // The write happened; a missing checkpoint only means it cannot be undone.
    log.error({ err, session: who.session, path: c.path.rel }, "could not keep a checkpoint");
  }
}
