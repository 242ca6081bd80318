import { describe, expect, it } from "vitest";
import { SlotLocks } from "../src/slot-lock.js";

describe("SlotLocks", () => {
  it("serves waiters first come first served and shows holder and queue", async () => {
    const locks = new SlotLocks();
    const order: string[] = [];
    const r1 = await locks.acquire(0, "a");
    const p2 = locks.acquire(0, "b").then((r) => {
      order.push("b");
      return r;
    });
    const p3 = locks.acquire(0, "c").then((r) => {
      order.push("c");
      return r;
    });
    expect(locks.holding(0)).toEqual({ slot: 0, heldBy: "a", waiting: 2 });
    // Another slot is independent.
    const other = await locks.acquire(1, "x");
    expect(locks.holding(1).heldBy).toBe("x");
    r1();
    r1(); // a second release must not free the slot for someone else
    const r2 = await p2;
    expect(locks.holding(0)).toEqual({ slot: 0, heldBy: "b", waiting: 1 });
    r2();
    (await p3)();
    other();
    expect(order).toEqual(["b", "c"]);
    expect(locks.holding(0)).toEqual({ slot: 0, heldBy: "", waiting: 0 });
  });

  it("drops a waiter whose call is cancelled", async () => {
    const locks = new SlotLocks();
    const r1 = await locks.acquire(2, "a");
    const ac = new AbortController();
    const waiting = locks.acquire(2, "b", ac.signal);
    const p3 = locks.acquire(2, "c");
    ac.abort(new Error("gone"));
    await expect(waiting).rejects.toThrow("gone");
    expect(locks.holding(2)).toEqual({ slot: 2, heldBy: "a", waiting: 1 });
    r1();
    await p3;
    expect(locks.holding(2).heldBy).toBe("c");
    await expect(locks.acquire(2, "d", AbortSignal.abort(new Error("already")))).rejects.toThrow("already");
  });
});
