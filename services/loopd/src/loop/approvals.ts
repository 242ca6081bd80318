import { messageOf, type BrokerService, type ClientOf, type Logger, type Proposal } from "@boxmaker/common";
import type { ToolOutcome } from "./tool-dispatch.js";

/**
 * Turns waiting on a person's decision about a staged proposal. Decisions
 * reach loopd through its own DecideProposal (the CLI's approve/reject), so
 * the waiting turn resumes the moment a person decides.
 */
export class ApprovalWaits {
  private readonly waiting = new Map<string, (p: Proposal) => void>();

  constructor(private readonly waitMs: number) {}

  pending(): string[] {
    return [...this.waiting.keys()];
  }

  wait(proposalId: string, signal: AbortSignal): Promise<ToolOutcome> {
    return new Promise<ToolOutcome>((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        resolve({
          isError: false,
          content:
            `staged for approval as proposal ${proposalId}; nobody has decided yet, so nothing was applied. ` +
            `Tell the operator it is waiting (boxmaker approve ${proposalId}).`,
          proposal: { id: proposalId, state: "pending" },
        });
      }, this.waitMs);
      const onAbort = () => {
        cleanup();
        reject(signal.reason);
      };
      const cleanup = () => {
        clearTimeout(timer);
        this.waiting.delete(proposalId);
        signal.removeEventListener("abort", onAbort);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiting.set(proposalId, (p) => {
        cleanup();
        resolve(outcomeOf(p));
      });
    });
  }

  /** Resumes the turn waiting on `p`; false when no turn waits for it any more (the decision came late). */
  decided(p: Proposal): boolean {
    const resume = this.waiting.get(p.id);
    resume?.(p);
    return resume !== undefined;
  }
}

/**
 * What the model is told, at the start of its session's next turn, about a
 * proposal a person decided after the turn that made it had stopped waiting.
 */
export function lateDecisionNote(p: Proposal): string {
  const what = `${p.tool} (proposal ${p.id})`;
  switch (p.state) {
    case "applied":
      return `${what} was approved and applied after your turn ended${p.result ? `: ${p.result}` : "."}`;
    case "rejected":
      return `${what} was rejected by the operator after your turn ended${p.result ? `: ${p.result}` : "."}`;
    default:
      return `${what} was approved after your turn ended but could not be applied: ${p.result || p.state}`;
  }
}

/**
 * A turn cancelled while it waited on a proposal withdraws it (brokerd), so
 * it can no longer be applied; the call's result says so. One a person
 * decided in the meantime keeps that decision.
 */
export async function withdrawProposal(
  broker: Pick<ClientOf<typeof BrokerService>, "withdrawProposals">,
  log: Logger,
  id: string,
  why: string,
): Promise<ToolOutcome> {
  let p: Proposal | undefined;
  let failure = "";
  try {
    const res = await broker.withdrawProposals(
      { ids: [id], reason: `the turn that staged it was ${why}` },
      { timeoutMs: WITHDRAW_TIMEOUT_MS, waitForReady: true },
    );
    p = res.proposals[0];
  } catch (err) {
    failure = messageOf(err);
    log.warn({ proposal: id, err: failure }, "cancelled turn: its proposal could not be withdrawn");
  }
  if (p && p.state !== "withdrawn" && p.state !== "pending") return outcomeOf(p);
  if (p?.state === "withdrawn") {
    return {
      isError: true,
      content: `cancelled: the turn was ${why} while this call waited for approval; proposal ${id} was withdrawn and nothing was applied.`,
      proposal: { id, state: "withdrawn" },
    };
  }
  return {
    isError: true,
    content: `cancelled: the turn was ${why} while this call waited for approval; proposal ${id} could not be withdrawn (${failure || "brokerd does not know it"}) and may still be decided.`,
    proposal: { id, state: "pending" },
  };
}

const WITHDRAW_TIMEOUT_MS = 5000;

function outcomeOf(p: Proposal): ToolOutcome {
  switch (p.state) {
    case "applied":
      return {
        isError: false,
        content: p.result || `approved and applied (proposal ${p.id})`,
        proposal: { id: p.id, state: "applied" },
      };
    case "rejected":
      return {
        isError: true,
        content: `the operator rejected this (proposal ${p.id})${p.result ? `: ${p.result}` : ""}`,
        proposal: { id: p.id, state: "rejected" },
      };
    default:
      return {
        isError: true,
        content: `approved but not applied (proposal ${p.id}): ${p.result || p.state}`,
        proposal: { id: p.id, state: "failed" },
      };
  }
}
