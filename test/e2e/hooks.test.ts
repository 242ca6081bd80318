import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitFor } from "../support/stack.js";
import { useStack } from "../support/use-stack.js";
import { doneOf, newSession, turn } from "../support/loop-client.js";

/**
 * Each hook appends the JSON it read on stdin to one file beside the workspace (hooks run in the workspace root),
 * as one line in one write: hooks run concurrently, and a line written in pieces could be read half-done or
 * interleaved with another hook's.
 */
const record = (tag: string) => `l="$(cat)"; printf '%s %s\\n' ${tag} "$l" >> ../hook-events.log`;

/**
 * The events loopd reports (session_start, turn_end, notifications) reach
 * brokerd's hooks through the real daemons, and a hook that fails or hangs
 * changes nothing about the turn.
 */
describe("hooks at a session's events", () => {
  const t = useStack("bxh-", {
    loopd: { approval_wait_ms: 300 },
    brokerd: {
      hooks: {
        session_start: [{ command: record("start") }],
        turn_end: [
          { name: "broken", command: "exit 3" },
          { name: "hangs", command: "sleep 60", timeout_ms: 100 },
          { command: record("end") },
        ],
        notification: [{ name: "phone", command: record("notify"), unsandboxed: true }],
      },
    },
  });
  const events = () => {
    const f = join(t.dir, "hook-events.log");
    if (!existsSync(f)) return [];
    return readFileSync(f, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => ({ tag: l.slice(0, l.indexOf(" ")), input: JSON.parse(l.slice(l.indexOf(" ") + 1)) }));
  };
  const seen = async (n: number, what: string) => {
    await waitFor(() => events().length >= n, 20_000, what);
    return events();
  };

  it("session_start at creation, approval_waiting for a staged call, turn_end with how the turn ended", async () => {
    const id = await newSession(t.client, "hooked");
    t.stack.sim.enqueue({
      toolCalls: [{ id: "w1", name: "write_file", arguments: '{"path":"a.txt","content":"x\\n"}' }],
    });
    t.stack.sim.enqueue({ content: "It waits for approval." });
    expect(doneOf(await turn(t.client, id, "write a.txt")).finalText).toBe("It waits for approval.");
    // Hooks are never awaited by a turn, so they may finish in any order: each event once, by its tag.
    const got = await seen(3, "three hook events");
    expect(got.map((e) => e.tag).sort()).toEqual(["end", "notify", "start"]);
    const of = (tag: string) => got.find((e) => e.tag === tag)!;
    expect(of("start").input).toMatchObject({ event: "session_start", session_id: id, cwd: t.stack.workspace });
    expect(of("notify").input).toMatchObject({
      event: "notification",
      session_id: id,
      notification: { kind: "approval_waiting", message: expect.stringMatching(/proposal p-\S+ waits for approval/) },
    });
    expect(of("end").input).toMatchObject({ event: "turn_end", session_id: id, stop_reason: "stop" });
  });

  it("a budget that ends a turn is a notification", async () => {
    const before = events().length;
    const id = await newSession(t.client, "budget");
    t.stack.sim.enqueue({ toolCalls: [{ id: "l1", name: "list_dir", arguments: '{"path":"."}' }] });
    const evs: unknown[] = [];
    for await (const ev of t.client.send({ sessionId: id, text: "look around", budgets: { maxIterations: 1 } }))
      evs.push(ev);
    const got = (await seen(before + 3, "the budget's notification")).slice(before);
    const notify = got.find((e) => e.tag === "notify");
    expect(notify?.input).toMatchObject({
      session_id: id,
      notification: {
        kind: "budget_ended",
        message: expect.stringContaining("its iterations budget ended the turn (1 of 1)"),
      },
    });
    expect(got.find((e) => e.tag === "end")?.input).toMatchObject({ stop_reason: "budget" });
  });

  it("every hook run, failed or not, has its audit line", async () => {
    const hookLines = () =>
      readFileSync(join(t.dir, "state", "broker", "audit.jsonl"), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { kind: string; rule: string; decision: string })
        .filter((a) => a.kind === "hook");
    // Two sessions and two turns: start ×2, turn_end 3 × 2, notify ×2; the file is written through a buffer.
    await waitFor(() => hookLines().length >= 10, 20_000, "the audit lines");
    const hooks = hookLines();
    expect(hooks.filter((h) => h.rule === "hook:turn_end:broken").map((h) => h.decision)).toEqual(["ok", "ok"]);
    expect(hooks.filter((h) => h.rule === "hook:turn_end:hangs").map((h) => h.decision)).toEqual([
      "timed-out",
      "timed-out",
    ]);
  });
});
