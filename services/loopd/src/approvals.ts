import type { Proposal } from "@boxmaker/common";
import type { ToolOutcome } from "./agent-loop.js";

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

  decided(p: Proposal): void {
    this.waiting.get(p.id)?.(p);
  }
}

export function outcomeOf(p: Proposal): ToolOutcome {
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
