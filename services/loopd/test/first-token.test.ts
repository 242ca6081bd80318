import { describe, expect, it } from "vitest";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { CompletionEventSchema } from "@boxmaker/common";
import { TurnBudget } from "../src/loop/budgets.js";
import { requestCompletion } from "../src/model-requests/completion.js";
import { sessionPerTest } from "./session-fixture.js";

const fx = sessionPerTest();

const unlimited = { max_iterations: 0, max_total_tokens: 0, max_wall_ms: 0, max_thinking_tokens: 0 };
const ev = (e: MessageInitShape<typeof CompletionEventSchema>) => create(CompletionEventSchema, e);

// A client's stream writes an event as it is published, but http2 puts it on the socket only
// when the event loop next turns. When inferproxy's events arrive in a burst, loopd has the
// rest in hand and would publish all of it first: the first token would wait for the burst.
describe("a request's first token", () => {
  for (const first of ["content", "reasoning"] as const) {
    it(`(${first}) gets a turn of the event loop before loopd takes the next event`, async () => {
      const s = fx.session;
      const turnedBeforeNext: boolean[] = [];
      const infer = {
        complete: () =>
          (async function* () {
            for (let i = 0; i < 3; i++) {
              let turned = false;
              // Queued before the token is handed over: it runs only when the loop turns.
              setImmediate(() => (turned = true));
              yield ev({ event: { case: first, value: { text: `t${i}` } } });
              // loopd is back for the next event of the burst.
              turnedBeforeNext.push(turned);
            }
            yield ev({ event: { case: "final", value: { messageJson: '{"role":"assistant","content":"t0t1t2"}' } } });
          })(),
      };
      const final = await requestCompletion({
        s,
        infer,
        budget: new TurnBudget(unlimited),
        requestId: "r",
        maxTokens: 100,
        signal: new AbortController().signal,
      });
      expect(final.messageJson).toContain("t0t1t2");
      // The first token had its turn; the rest of the burst goes out paced by the stream's writer.
      expect(turnedBeforeNext).toEqual([true, false, false]);
    });
  }
});
