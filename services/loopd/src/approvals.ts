import type { Proposal } from "@boxmaker/common";
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
