import { describe, expect, it } from "vitest";
import { useStack } from "../support/use-stack.js";
import { createClient, InferService, type SessionEvent } from "@boxmaker/common";
import { countTokens } from "@boxmaker/llama-sim";
import { doneOf, loopClient, newSession, turn } from "../support/loop-client.js";

/** How a turn ended: "stop" and the like, or the failure's message. */
const endOf = (events: SessionEvent[]): string => {
  const last = events.at(-1)?.event;
  if (last?.case === "turnDone") return last.value.finishReason;
  if (last?.case === "turnFailed") return `failed: ${last.value.message}`;
  return `no end: ${last?.case}`;
};

/**
 * Issue #36: a digit-heavy tool result (`seq` output) costs about one token a
 * byte — a Qwen tokenizer reads every digit alone — where prose costs four or
 * five. Estimated from bytes, loopd thought the session far smaller than it
 * was, sent a compaction request the server refused as longer than the slot,
 * and every later message of the session failed the same way, a loopd restart
 * included. Compaction counts with the server's tokenizer now, and a refused
 * prompt is made to fit by the session itself.
 */
describe("a digit-heavy tool result near the context (simulator)", () => {
  const nCtx = 16_384;
  const t = useStack("bxdc-", {
    sim: { nCtx },
    brokerd: { policy: { defaults: { exec: "allow" } } },
    loopd: { max_tokens: 512 },
  });

  const prose = (i: number) =>
    `Note ${i}: ${"the build script copies every generated header into the staging area before linking ".repeat(120)}`;

  it("the session answers its next message by itself, and again after a loopd restart", async () => {
    const id = await newSession(t.client, "digits");
    for (let i = 0; i < 5; i++) expect(doneOf(await turn(t.client, id, prose(i))).finishReason).toBe("stop");
    const reqs = t.stack.sim.completions;
    const before = reqs.at(-1)!.promptTokens!;
    // Prose history the slot holds, by the server's count: the digits below are what tips it over.
    expect(before).toBeGreaterThan(8_000);

    t.stack.sim.enqueue({
      toolCalls: [{ name: "run_command", arguments: JSON.stringify({ command: "seq 1 20000" }) }],
    });
    const first = endOf(await turn(t.client, id, "count to twenty thousand"));
    // It may fail once, saying why; the session must not stay that way.
    if (first !== "stop") expect(first).toMatch(/^failed: .*tokens/);

    expect(endOf(await turn(t.client, id, "what was the last number?"))).toBe("stop");

    await t.stack.kill("loopd", "SIGKILL");
    await t.stack.startDaemon("loopd");
    const c = loopClient(t.stack.sockets.loopd);
    await c.waitForReady(10_000);
    let log: Awaited<ReturnType<typeof c.getSession>>;
    try {
      expect(endOf(await turn(c, id, "and the first?"))).toBe("stop");
      expect(endOf(await turn(c, id, "thanks"))).toBe("stop");
      log = await c.getSession({ id });
    } finally {
      c.close();
    }
    // What tripped the estimate: the capped `seq` result, by bytes against the server's count (CountTokens).
    const result = log.messages
      .map((m) => JSON.parse(m.messageJson) as { role: string; content: string })
      .find((m) => m.role === "tool" && m.content.includes("19999"))!;
    const jsonBytes = Buffer.byteLength(JSON.stringify(result.content));
    const infer = createClient(InferService, t.stack.sockets.inferproxy);
    const counted = (await infer.countTokens({ texts: [result.content] })).textTokens[0]!;
    infer.close();
    expect(counted).toBe(countTokens(result.content));
    // Three bytes a token is the estimate before the server has counted anything; prose measures more.
    expect(counted).toBeGreaterThan(2 * Math.ceil(jsonBytes / 3));

    // No request the session sent after the first refusal was refused again.
    const refused = t.stack.sim.completions.filter((r) => r.status !== 200);
    expect(refused.length).toBeLessThanOrEqual(1);
  });

  it("CountTokens counts a request's prompt as the completion reads it", async () => {
    const last = t.stack.sim.completions.at(-1)!;
    const body = last.body as { messages: unknown[]; tools?: unknown[] };
    const infer = createClient(InferService, t.stack.sockets.inferproxy);
    try {
      const r = await infer.countTokens({
        messagesJson: JSON.stringify(body.messages),
        toolsJson: body.tools ? JSON.stringify(body.tools) : "",
        texts: ["1\n2\n3", ""],
      });
      expect(r.promptTokens).toBe(last.promptTokens);
      expect(r.textTokens).toEqual([5, 0]);
    } finally {
      infer.close();
    }
  });
});
