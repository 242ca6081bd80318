import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import {
  FinalMessageSchema,
  RpcError,
  SlotActionKind,
  SlotActionResponseSchema,
  Status,
  type FinalMessage,
} from "@boxmaker/common";
import { Parking } from "../src/parking.js";
import { silentLog } from "./fakes.js";

interface SlotCall {
  slot: number;
  action: "save" | "restore";
  filename: string;
}

/** A fake inferproxy slot API: saves remember the tokens the slot held; restores give them back. */
function fakeSlots(opts: { fail?: (c: SlotCall) => Error | undefined } = {}) {
  const calls: SlotCall[] = [];
  const files = new Map<string, number>();
  let held = 0;
  return {
    calls,
    /** What the slot holds now, as the next save will report it. */
    hold(tokens: number) {
      held = tokens;
    },
    async slotAction(req: { slot?: number; action?: SlotActionKind; filename?: string }) {
      const c: SlotCall = {
        slot: req.slot ?? 0,
        action: req.action === SlotActionKind.SAVE ? "save" : "restore",
        filename: req.filename ?? "",
      };
      calls.push(c);
      const err = opts.fail?.(c);
      if (err) throw err;
      if (c.action === "save") files.set(c.filename, held);
      const tokens = c.action === "save" ? held : (files.get(c.filename) ?? 0);
      return create(SlotActionResponseSchema, { tokens, ms: 1 });
    },
  };
}

const live = new AbortController().signal;
const final = (cacheN: number, promptN = 5): FinalMessage =>
  create(FinalMessageSchema, { timings: { cacheN, promptN, predictedN: 1 } });

describe("parking", () => {
  it("does nothing while one session keeps its slot", async () => {
    const infer = fakeSlots();
    const p = new Parking(infer, silentLog, true);
    await p.arrive(0, "a", live);
    await p.arrive(0, "a", live);
    expect(infer.calls).toEqual([]);
    expect(p.occupantOf(0)).toBe("a");
  });

  it("saves the leaving session's cache and restores it when that session returns", async () => {
    const infer = fakeSlots();
    const p = new Parking(infer, silentLog, true);
    await p.arrive(0, "a", live);
    infer.hold(900);
    await p.arrive(0, "b", live); // a leaves: saved; b has nothing saved yet
    infer.hold(300);
    await p.arrive(0, "a", live); // b leaves: saved; a comes back: restored
    expect(infer.calls).toEqual([
      { slot: 0, action: "save", filename: "boxmaker-a.bin" },
      { slot: 0, action: "save", filename: "boxmaker-b.bin" },
      { slot: 0, action: "restore", filename: "boxmaker-a.bin" },
    ]);
    expect(p.stats).toMatchObject({ saves: 2, restores: 1 });
    expect(p.occupantOf(0)).toBe("a");
  });

  it("checks from the server's next response whether a restore held", async () => {
    const infer = fakeSlots();
    const p = new Parking(infer, silentLog, true);
    await p.arrive(0, "a", live);
    infer.hold(900);
    await p.arrive(0, "b", live);
    await p.arrive(0, "a", live);
    p.verify("a", final(900));
    expect(p.stats).toMatchObject({ restoreHits: 1, restoreMisses: 0 });
    // Only the first response after a restore is checked.
    p.verify("a", final(0));
    expect(p.stats.restoreMisses).toBe(0);

    await p.arrive(0, "b", live);
    await p.arrive(0, "a", live);
    p.verify("a", final(10, 900)); // the server re-read the prompt
    expect(p.stats).toMatchObject({ restoreHits: 1, restoreMisses: 1 });
  });

  it("a failed save is forgotten: the session is not restored from a file that was not written", async () => {
    const infer = fakeSlots({
      fail: (c) => (c.action === "save" ? new RpcError(Status.INTERNAL, "disk full") : undefined),
    });
    const p = new Parking(infer, silentLog, true);
    await p.arrive(0, "a", live);
    await p.arrive(0, "b", live);
    await p.arrive(0, "a", live);
    expect(infer.calls.map((c) => c.action)).toEqual(["save", "save"]);
    expect(p.on).toBe(true);
  });

  it("turns itself off when the server does not save slots", async () => {
    const infer = fakeSlots({
      fail: () =>
        new RpcError(
          Status.UNIMPLEMENTED,
          "llama-server does not support this slot save: start it with --slot-save-path",
        ),
    });
    const p = new Parking(infer, silentLog, true);
    await p.arrive(0, "a", live);
    await p.arrive(0, "b", live);
    expect(infer.calls).toHaveLength(1);
    expect(p.on).toBe(false);
    await p.arrive(0, "a", live);
    expect(infer.calls).toHaveLength(1);
    expect(p.occupantOf(0)).toBe("a");
  });

  it("off, it still tracks which session each slot holds", async () => {
    const infer = fakeSlots();
    const p = new Parking(infer, silentLog, false);
    await p.arrive(0, "a", live);
    await p.arrive(0, "b", live);
    await p.arrive(1, "c", live);
    expect(infer.calls).toEqual([]);
    expect([p.occupantOf(0), p.occupantOf(1)]).toEqual(["b", "c"]);
  });
});
