import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { useStack } from "../support/use-stack.js";
import { doneOf, newSession, turn } from "../support/loop-client.js";

/**
 * A staged write nobody decided in time: the turn goes on without it. When a
 * person approves it later, the change is applied and the model learns of it
 * at the start of its next turn.
 */
describe("an approval that comes after the turn stopped waiting", () => {
  const t = useStack("bxa-", { loopd: { approval_wait_ms: 300 } });

  it("is applied, and the session's next turn is told", async () => {
    const id = await newSession(t.client, "late");
    t.stack.sim.enqueue({
      toolCalls: [{ id: "w1", name: "write_file", arguments: '{"path":"late.txt","content":"ok\\n"}' }],
    });
    t.stack.sim.enqueue({ content: "The write is waiting for approval." });
    const first = await turn(t.client, id, "write late.txt");
    const result = first.find((e) => e.event.case === "toolResult");
    expect(result?.event.case === "toolResult" && result.event.value.proposalState).toBe("pending");
    expect(doneOf(first).finalText).toBe("The write is waiting for approval.");
    expect(existsSync(join(t.stack.workspace, "late.txt"))).toBe(false);

    const [proposal] = (await t.client.listProposals({ sessionId: id })).proposals;
    const decided = await t.client.decideProposal({ id: proposal!.id, approve: true });
    expect(decided.proposal!.state).toBe("applied");
    expect(readFileSync(join(t.stack.workspace, "late.txt"), "utf8")).toBe("ok\n");

    t.stack.sim.enqueue({ content: "Good, it is written." });
    doneOf(await turn(t.client, id, "is it done?"));
    const last = t.stack.sim.completions.at(-1)!.body as { messages: { role: string; content: string }[] };
    const user = last.messages.at(-1)!;
    expect(user.role).toBe("user");
    expect(user.content).toContain(
      `write_file (proposal ${proposal!.id}) was approved and applied after your turn ended`,
    );
    expect(user.content.endsWith("is it done?")).toBe(true);
  });
});
