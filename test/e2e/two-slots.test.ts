import { SessionRole } from "@boxmaker/common";
import { describe, expect, it } from "vitest";
import { waitFor } from "../support/stack.js";
import { doneOf, newSession, turn } from "../support/loop-client.js";
import { useStack } from "../support/use-stack.js";

/*
 * straylight's measured layout: two slots, so scheduled sessions and
 * subagents share slot 1 (what the NixOS module's `slots = 2` gives loopd).
 * A scheduled session that spawns a subagent, and a main session that does,
 * both finish, each request on the slot its layout names.
 */
describe("a two-slot stack (main 0; subagent and scheduled share 1)", () => {
  const t = useStack("bx2s-", {
    sim: { totalSlots: 2 },
    loopd: {
      slots: { main: 0, subagent: 1, scheduled: 1 },
      // Far in the future: the test runs it by hand.
      schedules: [{ id: "nightly", cron: "0 0 1 1 *", prompt: "nightly check: delegate the count" }],
    },
  });
  const spawn = (id: string, task: string) => ({
    toolCalls: [{ id, name: "spawn_agent", arguments: JSON.stringify({ task }) }],
  });
  /** The slots of the requests made since `from`, in order. */
  const slotsSince = (from: number) =>
    t.stack.sim.completions.slice(from).map((r) => (r.body as { id_slot: number }).id_slot);

  it("a scheduled session's subagent runs on the shared slot and the scheduled turn completes", async () => {
    const from = t.stack.sim.completions.length;
    t.stack.sim.enqueue(spawn("s1", "count the files for the nightly check"));
    t.stack.sim.enqueue({ content: "There are 12 files." });
    t.stack.sim.enqueue({ content: "Nightly check done: the subagent counted 12 files." });
    const started = await t.client.runSchedule({ id: "nightly" });
    let last = "";
    await waitFor(
      () => {
        void t.client.getSession({ id: started.id }).then((h) => {
          last = h.messages.at(-1)?.messageJson ?? "";
        });
        return last.includes("Nightly check done");
      },
      30_000,
      "the scheduled turn to finish (a shared-slot deadlock never does)",
    );
    // The scheduled turn's request, its subagent's, the scheduled turn's answer: all on slot 1.
    expect(slotsSince(from)).toEqual([1, 1, 1]);
    const child = (await t.client.listSessions({})).sessions.find(
      (s) => s.role === SessionRole.SUBAGENT && s.title.includes("nightly"),
    );
    expect(child?.state).toBe("idle");
  });

  it("a main session's subagent runs on slot 1 while main holds slot 0", async () => {
    const from = t.stack.sim.completions.length;
    t.stack.sim.enqueue(spawn("m1", "list the main session's files"));
    t.stack.sim.enqueue({ content: "main.ts and util.ts" });
    t.stack.sim.enqueue({ content: "The subagent found main.ts and util.ts." });
    const id = await newSession(t.client, "main work");
    const done = doneOf(await turn(t.client, id, "delegate a listing"));
    expect(done.finishReason).toBe("stop");
    expect(slotsSince(from)).toEqual([0, 1, 0]);
  });
});
