import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import type { SessionEvent } from "@boxmaker/common";
import { tempDir } from "../support/tmp.js";
import { loopClient, newSession, type LoopClient } from "../support/loop-client.js";
import type { Stack } from "../support/stack.js";
import { RealLlama, haveRealLlama, startStackOn } from "./support/real-llama.js";

type Retry = Extract<SessionEvent["event"], { case: "retry" }>["value"];
const retries = (events: SessionEvent[]): Retry[] =>
  events.flatMap((e) => (e.event.case === "retry" ? [e.event.value] : []));
const cases = (events: SessionEvent[]) => events.map((e) => e.event.case).join(",");

/**
 * The real llama-server is killed (SIGKILL, as an OOM kill or a crash would)
 * in the middle of generating, and started again on the same socket two
 * seconds later, as systemd would: the turn that was running completes.
 * The tiny think model (fixed seed) writes long reasoning, so the kill lands
 * mid-generation.
 */
describe.skipIf(!haveRealLlama("a turn survives a real llama-server restart"))(
  "real llama-server: killed and restarted mid-generation",
  () => {
    let tmp: ReturnType<typeof tempDir>;
    let llama: RealLlama;
    let stack: Stack;
    let c: LoopClient;

    beforeAll(async () => {
      tmp = tempDir("bxr-rs-");
      llama = await new RealLlama({
        model: "think",
        socketPath: join(tmp.dir, "llama.sock"),
        extraArgs: ["--seed", "3"],
      }).start();
      stack = await startStackOn(llama, tmp.dir, {
        loopd: { max_tokens: 200, budgets: { max_thinking_tokens: 0 }, parking: { enabled: false } },
      });
      c = loopClient(stack.sockets.loopd);
    }, 120_000);

    afterAll(async () => {
      c?.close();
      await stack?.stop();
      await llama?.close();
      tmp?.cleanup();
    }, 60_000);

    /** Kills the server at the 10th reasoning token of `events` (shown, then discarded), and starts it again 2 s later. */
    async function killMidGeneration(events: AsyncIterable<SessionEvent>): Promise<SessionEvent[]> {
      const out: SessionEvent[] = [];
      let restarted: Promise<unknown> | undefined;
      let reasoning = 0;
      for await (const ev of events) {
        out.push(ev);
        if (ev.event.case === "reasoning") reasoning++;
        if (!restarted && reasoning === 10) {
          await llama.stop("SIGKILL");
          restarted = new Promise((r) => setTimeout(r, 2_000)).then(() => llama.start());
        }
        if (ev.event.case === "turnDone" || ev.event.case === "turnFailed") break;
      }
      expect(restarted, `the turn ended before any reasoning: ${cases(out)}`).toBeDefined();
      await restarted;
      return out;
    }

    function expectCompletedAfterRetry(events: SessionEvent[], label: string) {
      const end = events.at(-1)!.event;
      const r = retries(events);
      const discarded = r[0]?.discardedReasoningTokens ?? 0;
      const resent = r.find((x) => x.phase === "resent");
      console.log(
        `${label}: ${r.map((x) => x.phase).join(" → ")}; discarded ${discarded} thinking tokens; ` +
          `back after ${Math.round(resent?.waitedMs ?? 0)} ms, ${resent?.promptReread ?? 0} prompt tokens read again ` +
          `(${resent?.promptCached ?? 0} cached); turn ended ${end.case === "turnFailed" ? `${end.value.code}: ${end.value.message.slice(0, 160)}` : end.case}`,
      );
      expect(r.map((x) => x.phase)).toEqual(["waiting", "resent"]);
      expect(r[0]).toMatchObject({ code: "UNAVAILABLE", attempt: 1 });
      expect(discarded).toBeGreaterThanOrEqual(10);
      // A new process has an empty cache: the whole prompt is read again.
      expect(resent!.promptCached).toBe(0);
      expect(resent!.promptReread).toBeGreaterThan(100);
      // The same turn completes. (With another seed, prompt or tools array the random-weights model can hit the
      // server's own output parser error instead: this prompt, today's tools and seed 3 do not. Seed 7 did until
      // update_plan joined the core tools; seeds 3 and 13 of 3–13 complete this turn now.)
      expect(end.case, cases(events)).toBe("turnDone");
    }

    it("a main session's turn completes after the server is killed and restarted mid-generation", async () => {
      const sid = await newSession(c, "restart");
      // A first turn reaches the server: an outage after that is mid-session, not a server that was never there.
      const first: SessionEvent[] = [];
      for await (const ev of c.send({ sessionId: sid, text: "hello" })) first.push(ev);
      const events = await killMidGeneration(c.send({ sessionId: sid, text: "think about it" }));
      expectCompletedAfterRetry(events, "main turn");
      // Logged once: the turn's user message once, and at most one assistant message after it.
      const msgs = (await c.getSession({ id: sid })).messages.map(
        (m) => JSON.parse(m.messageJson) as { role: string; content: string },
      );
      const users = msgs.filter((m) => m.role === "user").map((m) => m.content);
      expect(users).toEqual(["hello", "think about it"]);
      const after = msgs.slice(msgs.findIndex((m) => m.content === "think about it") + 1);
      expect(after.filter((m) => m.role === "assistant").length).toBeLessThanOrEqual(1);
    }, 300_000);

    it("a scheduled turn completes after the server is killed and restarted mid-generation", async () => {
      const sch = await c.addSchedule({ cron: "0 0 1 1 *", prompt: "think about it" });
      const info = await c.runSchedule({ id: sch.id });
      const events = await killMidGeneration(c.follow({ sessionId: info.id, afterSeq: 0n }));
      await c.removeSchedule({ id: sch.id });
      expectCompletedAfterRetry(events, "scheduled turn");
    }, 300_000);
  },
);
