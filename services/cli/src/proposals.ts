import type { Proposal } from "@boxmaker/common/client";
import type { LoopClient } from "./connection.js";
import { UsageError } from "./errors.js";

/**
 * The proposal with this id (a unique prefix is enough, ids are long).
 * Decided ones are included so approving twice says what happened the first time.
 */
export async function findProposal(client: LoopClient, id: string): Promise<Proposal> {
  const { proposals } = await client.listProposals({ includeDecided: true });
  const exact = proposals.find((p) => p.id === id);
  if (exact) return exact;
  const matches = proposals.filter((p) => p.id.startsWith(id));
  if (matches.length === 1) return matches[0]!;
  const pending = proposals.filter((p) => p.state === "pending").map((p) => p.id);
  if (matches.length > 1) throw new UsageError(`"${id}" matches ${matches.length} proposals; give more of the id`);
  throw new UsageError(`no proposal ${id}; ${pending.length ? `pending: ${pending.join(", ")}` : "none is pending"}`);
}
