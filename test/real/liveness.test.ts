import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import type { SessionEvent } from "@boxmaker/common";
import { tempDir } from "../support/tmp.js";
import { loopClient, newSession, type LoopClient } from "../support/loop-client.js";
import { RealLlama, haveRealLlama, startStackOn } from "./support/real-llama.js";

/** A turn's events, with the longest wait between two of them. */
async function timedTurn(c: LoopClient, sessionId: string, text: string) {
  const events: SessionEvent[] = [];
  const t0 = performance.now();
  let last: number | undefined;
  let longestGapMs = 0;
  for await (const ev of c.send({ sessionId, text })) {
    const now = performance.now();
    // Silence counts from the first generated delta: before it the prompt is being read.
    if (last !== undefined) longestGapMs = Math.max(longestGapMs, now - last);
    if (last !== undefined || ev.event.case === "reasoning" || ev.event.case === "content") last = now;
    events.push(ev);
  }
  const tookMs = performance.now() - t0;
  const end = events.at(-1)?.event;
  const failed = end?.case === "turnFailed" ? end.value : undefined;
  return { events, longestGapMs, tookMs, failed, cases: events.map((e) => e.event.case) };
}

/**
 * The tiny think model (random weights, thinking forced open) behind the real
 * server: its output parser holds output back for seconds at a time while the
 * slot keeps decoding. With a 1 s liveness window such silence is all but
 * certain; inferproxy must ask the server (GET /slots) and keep the stream.
 */
describe.skipIf(!haveRealLlama("liveness against a real llama-server"))(
  "real llama-server: liveness and the thinking cap",
  () => {
    let tmp: ReturnType<typeof tempDir>;
    let llama: RealLlama;

    beforeAll(async () => {
      tmp = tempDir("bxr-live-");
      // A fixed sampling seed: the random-weights model then writes the same text for the same prompt,
      // so whether the server's own output parser gives up early does not change from run to run.
      llama = await new RealLlama({
        model: "think",
        socketPath: join(tmp.dir, "llama.sock"),
        extraArgs: ["--seed", "7"],
      }).start();
    }, 120_000);

    afterAll(async () => {
      await llama?.close();
      tmp?.cleanup();
    }, 60_000);

    async function withStack<T>(
      name: string,
      loopd: Record<string, unknown>,
      f: (c: LoopClient) => Promise<T>,
    ): Promise<T> {
      const stack = await startStackOn(llama, join(tmp.dir, name), {
        inferproxy: { liveness_timeout_ms: 1000 },
        loopd,
      });
      const c = loopClient(stack.sockets.loopd);
      try {
        return await f(c);
      } finally {
        c.close();
        await stack.stop();
      }
    }

    it("a long generation that goes silent while the slot keeps decoding is not killed by a 1 s window", async () => {
      await withStack("long", { max_tokens: 1200, budgets: { max_thinking_tokens: 0 } }, async (c) => {
        const sid = await newSession(c, "long think");
        const r = await timedTurn(c, sid, "think about it");
        console.log(
          `liveness: longest silence ${Math.round(r.longestGapMs)} ms (window 1000 ms), turn ${Math.round(r.tookMs)} ms; ` +
            `turn ended ${r.failed ? `${r.failed.code}: ${r.failed.message.slice(0, 160)}` : "cleanly"}`,
        );
        // The turn may end in the server's own parse error (this model's output is random);
        // it must not end because inferproxy took a busy server for a dead one.
        expect(r.failed?.code ?? "").not.toBe("DEADLINE_EXCEEDED");
        expect(r.failed?.message ?? "").not.toMatch(/sent nothing for/);
        expect(r.cases).toContain("reasoning");
      });
    }, 300_000);

    it("a server that stops dead mid-stream (SIGSTOP) is still declared dead", async () => {
      await withStack("hung", { max_tokens: 1200, budgets: { max_thinking_tokens: 0 } }, async (c) => {
        const sid = await newSession(c, "hung");
        const events: SessionEvent[] = [];
        let stoppedAt = 0;
        let thrown: unknown;
        try {
          for await (const ev of c.send({ sessionId: sid, text: "think" })) {
            events.push(ev);
            if (!stoppedAt && ev.event.case === "reasoning") {
              llama.proc!.kill("SIGSTOP");
              stoppedAt = performance.now();
            }
          }
        } catch (err) {
          thrown = err;
        } finally {
          llama.proc!.kill("SIGCONT");
        }
        expect(
          thrown,
          `the Send stream itself failed after events ${events.map((e) => e.event.case).join(",")}`,
        ).toBeUndefined();
        expect(
          stoppedAt,
          `no reasoning before the turn ended: ${events.map((e) => e.event.case).join(",")}`,
        ).toBeGreaterThan(0);
        const end = events.at(-1)?.event;
        console.log(
          `hung server: turn ended ${Math.round(performance.now() - stoppedAt)} ms after SIGSTOP: ` +
            `${end?.case === "turnFailed" ? `${end.value.code}: ${end.value.message.slice(0, 200)}` : end?.case}`,
        );
        expect(end?.case).toBe("turnFailed");
        const failed = end!.value as { code: string; message: string };
        expect(failed.code).toBe("DEADLINE_EXCEEDED");
        expect(failed.message).toMatch(/sent nothing for \d+ ms .*GET \/slots/);
      });
    }, 300_000);

    it("the thinking cap from loopd's thinking budget fires, and its event reaches the client", async () => {
      await withStack("cap", { max_tokens: 300, budgets: { max_thinking_tokens: 20 } }, async (c) => {
        const sid = await newSession(c, "capped think");
        const r = await timedTurn(c, sid, "think, but not for long");
        const cap = r.events.find((e) => e.event.case === "thinkingCap")?.event.value as
          | { accepted: boolean; reasoningTokens: number; completionId: string; message: string }
          | undefined;
        console.log(
          `thinking cap: ${cap ? `fired at ${cap.reasoningTokens} reasoning tokens, accepted ${cap.accepted}` : "no event"}; ` +
            `longest silence ${Math.round(r.longestGapMs)} ms; turn ended ${r.failed ? `${r.failed.code}: ${r.failed.message.slice(0, 160)}` : "cleanly"}`,
        );
        expect(cap, `events: ${r.cases.join(",")}`).toBeDefined();
        expect(cap!.accepted).toBe(true);
        expect(cap!.reasoningTokens).toBeGreaterThanOrEqual(20);
        expect(cap!.completionId).toMatch(/^chatcmpl-/);
        expect(r.failed?.message ?? "").not.toMatch(/sent nothing for/);
      });
    }, 300_000);
  },
);
