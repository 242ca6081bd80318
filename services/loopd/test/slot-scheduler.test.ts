import { describe, expect, it } from "vitest";
import { SlotScheduler, type SlotWait } from "../src/slot-scheduler.js";

const live = () => new AbortController().signal;

describe("SlotScheduler", () => {
  it("grants a free slot at once, and each slot independently", async () => {
    const q = new SlotScheduler();
    const r0 = await q.acquire(0, "a", live());
    const r1 = await q.acquire(1, "b", live());
    expect([q.holder(0), q.holder(1)]).toEqual(["a", "b"]);
    r0();
    r1();
    expect([q.holder(0), q.holder(1)]).toEqual([undefined, undefined]);
  });

  it("hands a busy slot over in arrival order, telling each waiter its place", async () => {
    const q = new SlotScheduler();
    const releaseA = await q.acquire(0, "a", live());
    const waits: Record<string, SlotWait[]> = { b: [], c: [] };
    const order: string[] = [];
    const granted = (id: string) => (release: () => void) => {
      order.push(id);
      return release;
    };
    const b = q.acquire(0, "b", live(), (w) => waits.b!.push(w)).then(granted("b"));
    const c = q.acquire(0, "c", live(), (w) => waits.c!.push(w)).then(granted("c"));
    expect(q.queued(0)).toEqual(["b", "c"]);
    expect(waits.b).toEqual([{ slot: 0, position: 1, heldBy: "a" }]);
    expect(waits.c).toEqual([{ slot: 0, position: 2, heldBy: "a" }]);

    releaseA();
    const releaseB = await b;
    expect(q.holder(0)).toBe("b");
    // c moved up one place behind the new holder.
    expect(waits.c!.at(-1)).toEqual({ slot: 0, position: 1, heldBy: "b" });
    releaseB();
    (await c)();
    expect(order).toEqual(["b", "c"]);
    expect(q.holder(0)).toBeUndefined();
  });

  it("a waiter that gives up leaves the queue; the ones behind it move up", async () => {
    const q = new SlotScheduler();
    await q.acquire(0, "a", live());
    const ac = new AbortController();
    const cWaits: SlotWait[] = [];
    const b = q.acquire(0, "b", ac.signal);
    void q.acquire(0, "c", live(), (w) => cWaits.push(w));
    ac.abort(new Error("cancelled"));
    await expect(b).rejects.toThrow("cancelled");
    expect(q.queued(0)).toEqual(["c"]);
    expect(cWaits.map((w) => w.position)).toEqual([2, 1]);
  });

  it("refuses an already cancelled turn without queueing it", async () => {
    const q = new SlotScheduler();
    const ac = new AbortController();
    ac.abort(new Error("too late"));
    await expect(q.acquire(0, "a", ac.signal)).rejects.toThrow("too late");
    expect(q.holder(0)).toBeUndefined();
  });

  it("a release called twice hands the slot on once", async () => {
    const q = new SlotScheduler();
    const releaseA = await q.acquire(0, "a", live());
    const b = q.acquire(0, "b", live());
    void q.acquire(0, "c", live());
    releaseA();
    await b;
    releaseA();
    expect(q.holder(0)).toBe("b");
    expect(q.queued(0)).toEqual(["c"]);
  });
});
