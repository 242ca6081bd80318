import { afterEach, describe, expect, it } from "vitest";
import { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { doneOf, loopClient, newSession, turn } from "../support/loop-client.js";

/**
 * Two main-role sessions take turns on slot 0. With parking, the leaving
 * session's KV cache is saved and restored when it returns, so its next
 * request is a full cache hit; without it, the slot holds the other session.
 */
describe("session parking", () => {
  let tmp: ReturnType<typeof tempDir>;
  let stack: Stack;
  afterEach(async () => {
    await stack?.stop();
    tmp?.cleanup();
  });

  async function alternate(parking: boolean) {
    tmp = tempDir("bxp-");
    stack = await new Stack(tmp.dir, { loopd: { parking: { enabled: parking } } }).start();
    const c = loopClient(stack.sockets.loopd);
    const a = await newSession(c, "a");
    const b = await newSession(c, "b");
    const long = (who: string) => `${who}: ${"context ".repeat(300)}`;
    for (const [id, text] of [
      [a, long("A")],
      [b, long("B")],
      [a, "A again"],
      [b, "B again"],
    ] as const) {
      stack.sim.enqueue({ content: `ok ${text.slice(0, 1)}` });
      expect(doneOf(await turn(c, id, text)).finishReason).toBe("stop");
    }
    c.close();
    return stack.sim.completions.map((r) => ({
      cacheN: r.cacheN!,
      promptN: r.timings!.prompt_n,
      total: r.promptTokens!,
    }));
  }

  it("restores the returning session's cache: its next request is a full hit", async () => {
    const [aFirst, bFirst, aAgain, bAgain] = await alternate(true);
    for (const [first, again] of [
      [aFirst!, aAgain!],
      [bFirst!, bAgain!],
    ] as const) {
      // Everything the session had before is reused; only the new user message is processed.
      expect(again.cacheN).toBeGreaterThan(first.total);
      expect(again.promptN).toBeLessThan(12);
      expect(again.cacheN + again.promptN).toBe(again.total);
    }
    const saves = stack.sim.requests.filter((r) => r.path.includes("action=save"));
    const restores = stack.sim.requests.filter((r) => r.path.includes("action=restore"));
    expect(saves.length).toBeGreaterThanOrEqual(3);
    expect(restores.length).toBe(2);
  });

  it("without parking the returning session re-reads its prompt", async () => {
    const [aFirst, , aAgain] = await alternate(false);
    // Only the shared prefix (tools, system prompt) survives; A's own long message is read again.
    expect(aAgain!.cacheN).toBeLessThan(aFirst!.total - 300);
    expect(aAgain!.promptN).toBeGreaterThan(300);
  });
});
