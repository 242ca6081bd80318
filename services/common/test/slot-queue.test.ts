import { describe, expect, it } from "vitest";
import { SlotQueue, type QueuePlace } from "@boxmaker/common";

describe("SlotQueue", () => {
  it("grants a free slot at once and queues the rest first come, first served", async () => {
    const q = new SlotQueue();
    const order: string[] = [];
    const a = await q.acquire(0, "a");
    const granted = (name: string) => (r: () => void) => {
      order.push(name);
      return r;
    };
    const b = q.acquire(0, "b").then(granted("b"));
    const c = q.acquire(0, "c").then(granted("c"));
    expect(q.holder(0)).toBe("a");
    expect(q.waiting(0)).toEqual(["b", "c"]);
    a();
    (await b)();
    (await c)();
    expect(order).toEqual(["b", "c"]);
    expect(q.holder(0)).toBeUndefined();
  });

  it("keeps slots independent", async () => {
    const q = new SlotQueue();
    await q.acquire(0, "a");
    const r = await q.acquire(1, "b");
    expect([q.holder(0), q.holder(1)]).toEqual(["a", "b"]);
    r();
    expect(q.holder(1)).toBeUndefined();
  });

  it("tells each waiter its place, again when one ahead of it leaves", async () => {
    const q = new SlotQueue();
    const release = await q.acquire(2, "a");
    const placesC: QueuePlace[] = [];
    const ac = new AbortController();
    const b = q.acquire(2, "b", ac.signal);
    const c = q.acquire(2, "c", undefined, (p) => placesC.push(p));
    expect(placesC).toEqual([{ slot: 2, position: 2, heldBy: "a" }]);
    ac.abort(new Error("client left"));
    await expect(b).rejects.toThrow("client left");
    expect(placesC.at(-1)).toEqual({ slot: 2, position: 1, heldBy: "a" });
    release();
    (await c)();
    expect(q.waiting(2)).toEqual([]);
  });

  it("ignores a second release and a release after the slot moved on", async () => {
    const q = new SlotQueue();
    const a = await q.acquire(0, "a");
    const b = q.acquire(0, "b");
    a();
    a();
    expect(q.holder(0)).toBe("b");
    (await b)();
    expect(q.holder(0)).toBeUndefined();
  });

  it("rejects at once when the signal is already aborted", async () => {
    const q = new SlotQueue();
    await expect(q.acquire(0, "a", AbortSignal.abort(new Error("gone")))).rejects.toThrow("gone");
    expect(q.holder(0)).toBeUndefined();
  });
});
