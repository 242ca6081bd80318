import { describe, expect, it } from "vitest";
import type { Timings } from "@boxmaker/common";
import { doneOf, newSession, turn } from "../support/loop-client.js";
import { haveRealLlama } from "./support/real-llama.js";
import { useRealStack } from "./support/use-real-stack.js";

/**
 * loopd's promise, measured by the real server's own `timings`: every request
 * after the first costs only its new tokens. A request's prompt is
 * cache_n + prompt_n tokens; what the slot's KV cache holds after the previous
 * request is that request's prompt plus what it generated, less the last
 * generated token (the end-of-turn token is sampled but never decoded, so the
 * next request must process it). Whatever the new request has beyond that is
 * truly new; anything more in prompt_n means an earlier byte of the
 * conversation was rendered differently and the cache was lost.
 */
describe.skipIf(!haveRealLlama("real llama-server: multi-turn prompt cache reuse"))(
  "prompt cache reuse on a real llama-server",
  () => {
    const t = useRealStack("bxr-c-", { model: "answer" });

    it("Σprompt_n over truly new tokens stays ≤ 1.02 over 12 turns", async () => {
      const id = await newSession(t.client, "cache");
      const timings: Timings[] = [];
      for (let i = 0; i < 12; i++) {
        const done = doneOf(
          await turn(t.client, id, `Question ${i}: what does line ${i * 7} of the notes say about "caching" & <tags>?`),
        );
        expect(done.finishReason).toBe("stop");
        expect(done.iterations).toBe(1);
        timings.push(done.timings!);
      }
      let promptN = 0;
      let fresh = 0;
      const perRequest: Array<{ prompt_n: number; new: number }> = [];
      for (let k = 1; k < timings.length; k++) {
        const prev = timings[k - 1]!;
        const cur = timings[k]!;
        const held = prev.cacheN + prev.promptN + prev.predictedN - 1;
        const truly = cur.cacheN + cur.promptN - held;
        expect(truly).toBeGreaterThan(0);
        // The whole previous exchange is reused: nothing it held was read again.
        expect(cur.cacheN).toBe(held);
        promptN += cur.promptN;
        fresh += truly;
        perRequest.push({ prompt_n: cur.promptN, new: truly });
      }
      const ratio = promptN / fresh;
      console.log(
        `real llama-server cache reuse over ${perRequest.length} follow-up requests: Σprompt_n ${promptN} / new ${fresh} = ${ratio.toFixed(3)}; per request ${JSON.stringify(perRequest)}`,
      );
      expect(ratio).toBeLessThanOrEqual(1.02);
    }, 300_000);
  },
);
