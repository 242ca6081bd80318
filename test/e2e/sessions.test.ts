import { describe, expect, it } from "vitest";
import { SessionRole, type SessionEvent } from "@boxmaker/common";
import { useStack } from "../support/use-stack.js";
import { doneOf, loopClient, newSession, startTurn, turn } from "../support/loop-client.js";

describe("sessions through loopd", () => {
  const t = useStack("bxs-");

  it("spawn_agent runs a child session on the subagent slot and returns its answer", async () => {
    const parent = await newSession(t.client, "parent");
    t.stack.sim.enqueue({ toolCalls: [{ id: "sp", name: "spawn_agent", arguments: '{"task":"count to three"}' }] }, 0);
    t.stack.sim.enqueue({ content: "one, two, three" }, 1);
    t.stack.sim.enqueue({ content: "The subagent counted: one, two, three." }, 0);
    const done = doneOf(await turn(t.client, parent, "delegate counting"));
    expect(done.finalText).toBe("The subagent counted: one, two, three.");
    const slots = t.stack.sim.completions.map((r) => (r.body as { id_slot: number }).id_slot);
    expect(slots).toEqual([0, 1, 0]);
    const sessions = (await t.client.listSessions({})).sessions;
    const child = sessions.find((s) => s.parentId === parent)!;
    expect(child.role).toBe(SessionRole.SUBAGENT);
    expect(child.slot).toBe(1);
    const parentHistory = await t.client.getSession({ id: parent });
    const result = parentHistory.messages.map((m) => JSON.parse(m.messageJson)).find((m) => m.role === "tool");
    expect(result.content).toBe("one, two, three");
  });

  it("a second session on a busy slot waits its turn, visibly", async () => {
    t.stack.sim.reset();
    const a = await newSession(t.client, "a");
    const b = await newSession(t.client, "b");
    t.stack.sim.enqueue({ content: "slow answer from a", tokenDelayMs: 30 });
    t.stack.sim.enqueue({ content: "answer from b" });
    const ta = startTurn(t.client, a, "first");
    await ta.generating;
    const eb = await turn(t.client, b, "second");
    const ea = await ta.events;
    const waiting = eb.find((e) => e.event.case === "waiting");
    expect(waiting?.event.value).toMatchObject({ slot: 0, position: 1, heldBySession: a });
    expect(doneOf(ea).finalText).toBe("slow answer from a");
    expect(doneOf(eb).finalText).toBe("answer from b");
    expect(t.stack.sim.maxConcurrentPerSlot[0]).toBe(1);
  });

  it("a second client follows a running turn; cancel stops it and the session stays usable", async () => {
    t.stack.sim.reset();
    const id = await newSession(t.client, "follow");
    t.stack.sim.enqueue({ content: "word ".repeat(400), tokenDelayMs: 10 });
    const other = loopClient(t.stack.sockets.loopd);
    const followed: SessionEvent[] = [];
    const ac = new AbortController();
    const sent = startTurn(t.client, id, "talk a lot");
    await sent.generating;
    const following = (async () => {
      try {
        for await (const ev of other.follow({ sessionId: id, afterSeq: 0n }, { signal: ac.signal })) {
          followed.push(ev);
          if (ev.event.case === "content" && followed.length === 5) await other.cancelTurn({ sessionId: id });
          if (ev.event.case === "turnDone") break;
        }
      } catch {
        /* ended by abort */
      }
    })();
    const events = await sent.events;
    await following;
    other.close();
    expect(doneOf(events).finishReason).toBe("cancelled");
    expect(followed[0]!.event.case).toBe("turnStarted");
    expect(followed.at(-1)!.event.case).toBe("turnDone");
    // The server stopped generating: the simulator saw the client leave.
    await t.stack.sim.waitIdle(0);
    expect(t.stack.sim.completions.at(-1)!.outcome).toBe("aborted");
    t.stack.sim.enqueue({ content: "back" });
    expect(doneOf(await turn(t.client, id, "again")).finalText).toBe("back");
  });

  it("archives sessions and manages schedules", async () => {
    const id = await newSession(t.client, "old");
    await t.client.archiveSession({ id });
    expect((await t.client.listSessions({})).sessions.some((s) => s.id === id)).toBe(false);
    expect((await t.client.listSessions({ includeArchived: true })).sessions.find((s) => s.id === id)!.state).toBe(
      "archived",
    );
    await expect(turn(t.client, id, "hi")).rejects.toThrow(/archived/);

    const sch = await t.client.addSchedule({ cron: "0 3 * * *", prompt: "nightly check" });
    expect((await t.client.listSchedules({})).schedules.map((s) => s.id)).toContain(sch.id);
    expect(Number(sch.nextRunUnixMs)).toBeGreaterThan(Date.now());
    await expect(t.client.addSchedule({ cron: "not a cron", prompt: "x" })).rejects.toThrow(/cron/);
    expect((await t.client.removeSchedule({ id: sch.id })).removed).toBe(true);
  });
});
