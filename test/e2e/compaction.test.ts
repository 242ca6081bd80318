import { describe, expect, it } from "vitest";
import { useStack } from "../support/use-stack.js";
import { doneOf, newSession, turn } from "../support/loop-client.js";

/**
 * A session that outgrows its slot's context is compacted into a new epoch
 * before a request would overflow: the model summarises, recent turns stay
 * verbatim, the boundary is in the log, and the turn never fails.
 */
describe("context limits and compaction", () => {
  // The tools array alone is ~1,000 of these tokens (ten core tools): a slot small enough to fill in twelve turns, with room for it.
  const nCtx = 5120;
  const t = useStack("bxz-", {
    sim: { nCtx },
    loopd: { max_tokens: 256, compaction: { threshold: 0.8, keep_recent_messages: 4 } },
  });

  it("compacts before overflowing and keeps recent turns verbatim", async () => {
    const id = await newSession(t.client, "long");
    const question = (i: number) => `Turn ${i}: ${`fact-${i} `.repeat(150)}`;
    for (let i = 0; i < 12; i++) {
      // No script: the simulator's default responder answers every request, the summary request included.
      const done = doneOf(await turn(t.client, id, question(i)));
      expect(done.finishReason).toBe("stop");
    }
    const reqs = t.stack.sim.completions;
    expect(reqs.every((r) => r.status === 200)).toBe(true);
    expect(Math.max(...reqs.map((r) => r.promptTokens!))).toBeLessThanOrEqual(nCtx);

    const summaries = reqs.filter((r) => r.rawBody.includes("[Boxmaker compaction]"));
    expect(summaries.length).toBeGreaterThan(0);

    const history = await t.client.getSession({ id });
    expect(history.session!.epoch).toBeGreaterThan(0);
    // The latest request starts the new epoch: the system prompt carries the summary, the last turns are verbatim.
    const last = reqs.at(-1)!.body as { messages: { role: string; content: string }[] };
    expect(last.messages[0]!.content).toContain("Summary of the earlier conversation");
    expect(last.messages.some((m) => m.role === "user" && m.content === question(11))).toBe(true);
    expect(last.messages.some((m) => m.content === question(0))).toBe(false);
    // Nothing is lost from history: every question of every epoch is still in the log.
    const users = history.messages
      .map((m) => JSON.parse(m.messageJson) as { role: string; content: string })
      .filter((m) => m.role === "user");
    // …once each: messages carried into the new epoch are not shown twice.
    for (let i = 0; i < 12; i++) expect(users.filter((m) => m.content === question(i))).toHaveLength(1);
  });
});
