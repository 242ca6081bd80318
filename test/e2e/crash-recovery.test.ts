import { describe, expect, it } from "vitest";
import { useStack } from "../support/use-stack.js";
import { doneOf, loopClient, newSession, turn, type LoopClient } from "../support/loop-client.js";

/**
 * loopd's first promise: no session is ever lost or corrupted. loopd is
 * killed with SIGKILL at random moments while sessions run; after each
 * restart every session loads, every record a client saw acknowledged is
 * there, and the session accepts the next message.
 */
describe("crash recovery under SIGKILL", () => {
  const t = useStack("bxk-");

  it("50 kills at random moments lose no acknowledged record", async () => {
    const sessions: string[] = [];
    /** Per session: tool-call ids whose results a client saw, and user messages acknowledged. */
    const acked = new Map<string, { results: Set<string>; users: Set<string> }>();
    let killedMidTurn = 0;
    let seed = 12345;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };

    for (let round = 0; round < 50; round++) {
      const c: LoopClient = loopClient(t.stack.sockets.loopd);
      if (sessions.length < 4 || rand() < 0.2) {
        const id = await newSession(c, `s${round}`);
        sessions.push(id);
        acked.set(id, { results: new Set(), users: new Set() });
      }
      const id = sessions[Math.floor(rand() * sessions.length)]!;
      t.stack.sim.reset();
      for (let i = 0; i < 3; i++) {
        t.stack.sim.enqueue({
          toolCalls: [{ id: `r${round}-${i}`, name: "read_file", arguments: '{"path":"f.txt"}' }],
          tokenDelayMs: 2,
        });
      }
      t.stack.sim.enqueue({ content: "done with this", tokenDelayMs: 2 });
      const text = `round ${round}`;
      const killAfterMs = Math.floor(rand() * 120);
      const ac = new AbortController();
      let started = false;
      let finished = false;
      const seen = (async () => {
        try {
          for await (const ev of c.send({ sessionId: id, text }, { signal: ac.signal })) {
            if (ev.event.case === "turnStarted") {
              started = true;
              acked.get(id)!.users.add(text);
            }
            if (ev.event.case === "toolResult") acked.get(id)!.results.add(ev.event.value.callId);
            if (ev.event.case === "turnDone") finished = true;
          }
        } catch {
          /* the daemon died under us: that is the point */
        }
      })();
      await new Promise((r) => setTimeout(r, killAfterMs));
      await t.stack.kill("loopd", "SIGKILL");
      await seen;
      if (started && !finished) killedMidTurn++;
      c.close();
      await t.stack.startDaemon("loopd");

      const check = loopClient(t.stack.sockets.loopd);
      await check.waitForReady(5_000);
      const listed = (await check.listSessions({})).sessions;
      expect(listed.map((s) => s.id).sort()).toEqual([...sessions].sort());
      for (const sid of sessions) {
        const h = await check.getSession({ id: sid });
        expect(h.session!.state).not.toBe("running");
        const texts = h.messages.map(
          (m) => JSON.parse(m.messageJson) as { role: string; content?: string; tool_call_id?: string },
        );
        const a = acked.get(sid)!;
        for (const u of a.users) expect(texts.some((m) => m.role === "user" && m.content === u)).toBe(true);
        for (const r of a.results) expect(texts.some((m) => m.role === "tool" && m.tool_call_id === r)).toBe(true);
        // Well-formed: every assistant tool call has its result.
        const open = new Set<string>();
        for (const m of texts as { role: string; tool_calls?: { id: string }[]; tool_call_id?: string }[]) {
          for (const tc of m.tool_calls ?? []) open.add(tc.id);
          if (m.tool_call_id) open.delete(m.tool_call_id);
        }
        expect([...open]).toEqual([]);
      }
      check.close();
    }

    // The kills must really have landed inside running turns, not between them.
    expect(killedMidTurn).toBeGreaterThanOrEqual(25);

    // Every session takes a new message after all that.
    const c = loopClient(t.stack.sockets.loopd);
    t.stack.sim.reset();
    for (const sid of sessions) {
      t.stack.sim.enqueue({ content: "still here" });
      expect(doneOf(await turn(c, sid, "are you there?")).finalText).toBe("still here");
    }
    c.close();
  }, 300_000);
});
