import { describe, expect, it } from "vitest";
import { setImmediate } from "node:timers/promises";
import { AsyncQueue } from "../src/async-queue.js";

describe("AsyncQueue", () => {
  it("hands items from several producers to its reader in the order pushed, and ends when closed and drained", async () => {
    const q = new AsyncQueue<string>();
    q.push("a1");
    q.push("b1");
    q.push("a2");
    q.close();
    q.push("after the end");
    const got: string[] = [];
    for await (const x of q) got.push(x);
    expect(got).toEqual(["a1", "b1", "a2"]);
  });

  it("holds a producer that offers until the reader comes back for the next item", async () => {
    const q = new AsyncQueue<number>();
    const log: string[] = [];
    const producer = (async () => {
      for (const n of [1, 2]) {
        await q.offer(n);
        log.push(`producer past ${n}`);
      }
      q.close();
    })();
    for await (const n of q) {
      log.push(`reader has ${n}`);
      // The reader's own turn of the event loop (a stream writer flushing): the producer waits.
      await setImmediate();
      log.push(`reader done with ${n}`);
    }
    await producer;
    expect(log).toEqual([
      "reader has 1",
      "reader done with 1",
      "producer past 1",
      "reader has 2",
      "reader done with 2",
      "producer past 2",
    ]);
  });

  it("lets waiting producers go when the reader stops early", async () => {
    const q = new AsyncQueue<number>();
    const offered = [q.offer(1), q.offer(2), q.offer(3)];
    for await (const n of q) if (n === 1) break;
    await expect(Promise.all(offered)).resolves.toBeDefined();
    // And an offer to a closed queue does not wait for a reader that will never come.
    q.close();
    await q.offer(4);
  });
});
