import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import {
  FinalMessageSchema,
  RpcError,
  SlotActionKind,
  SlotActionResponseSchema,
  SlotFilesResponseSchema,
  Status,
  type FinalMessage,
} from "@boxmaker/common";
import { Parking, parkedFileOf, sessionOfParkedFile } from "../src/slots/parking.js";
import { silentLog } from "./fakes.js";

interface SlotCall {
  slot: number;
  action: "save" | "restore";
  filename: string;
}

/**
 * A fake inferproxy slot API: saves write a "file" remembering the tokens the
 * slot held; restores give them back (or fail as the server does when the file
 * is gone); SlotFiles lists and erases them. `evictOnSave` plays the size cap.
 */
function fakeSlots(opts: { fail?: (c: SlotCall) => Error | undefined; down?: () => boolean } = {}) {
  const calls: SlotCall[] = [];
  const files = new Map<string, number>();
  const erased: string[] = [];
  let held = 0;
  let evictOnSave: string[] = [];
  const unavailable = () => new RpcError(Status.UNAVAILABLE, "inferproxy is down");
  return {
    calls,
    files,
    erased,
    /** What the slot holds now, as the next save will report it. */
    hold(tokens: number) {
      held = tokens;
    },
    evictNext(names: string[]) {
      evictOnSave = names;
    },
    async slotAction(req: { slot?: number; action?: SlotActionKind; filename?: string }) {
      if (opts.down?.()) throw unavailable();
      const c: SlotCall = {
        slot: req.slot ?? 0,
        action: req.action === SlotActionKind.SAVE ? "save" : "restore",
        filename: req.filename ?? "",
      };
      calls.push(c);
      const err = opts.fail?.(c);
      if (err) throw err;
      if (c.action === "restore" && !files.has(c.filename)) {
        throw new RpcError(Status.FAILED_PRECONDITION, "Unable to restore slot: invalid slot save file");
      }
      if (c.action === "save") files.set(c.filename, held);
      const evicted = c.action === "save" ? evictOnSave.splice(0) : [];
      for (const e of evicted) files.delete(e);
      const tokens = c.action === "save" ? held : (files.get(c.filename) ?? 0);
      return create(SlotActionResponseSchema, { tokens, ms: 1, evicted });
    },
    async slotFiles(req: { erase?: string[] }) {
      if (opts.down?.()) throw unavailable();
      let n = 0;
      for (const e of req.erase ?? []) {
        erased.push(e);
        if (files.delete(e)) n++;
      }
      return create(SlotFilesResponseSchema, {
        managed: true,
        erased: n,
        files: [...files.keys()].map((filename) => ({ filename, bytes: 1n })),
      });
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

  it("a deleted or archived session's parked file is erased, and the slot no longer parks it", async () => {
    const infer = fakeSlots();
    const p = new Parking(infer, silentLog, true);
    await p.arrive(0, "a", live);
    await p.arrive(0, "b", live); // a parked
    expect([...infer.files.keys()]).toEqual(["boxmaker-a.bin"]);
    await p.forget("a");
    await p.forget("b"); // b holds the slot: it must not be parked when c arrives
    await p.arrive(0, "c", live);
    expect(infer.files.size).toBe(0);
    expect(infer.calls.filter((c) => c.action === "save").map((c) => c.filename)).toEqual(["boxmaker-a.bin"]);
    expect(p.hasParked("a")).toBe(false);
  });

  it("a session deleted while its save is under way has the file erased after the save", async () => {
    let finishSave: () => void = () => undefined;
    const infer = fakeSlots();
    const slow = {
      ...infer,
      async slotAction(req: Parameters<typeof infer.slotAction>[0]) {
        if (req.action === SlotActionKind.SAVE) await new Promise<void>((r) => (finishSave = r));
        return infer.slotAction(req);
      },
    };
    const p = new Parking(slow, silentLog, true);
    await p.arrive(0, "a", live);
    const arriving = p.arrive(0, "b", live);
    await new Promise((r) => setImmediate(r));
    const forgetting = p.forget("a");
    finishSave();
    await Promise.all([arriving, forgetting]);
    expect(infer.files.size).toBe(0);
    expect(p.hasParked("a")).toBe(false);
  });

  it("a failed save erases what it may have left; a file the cap evicted is not restored from", async () => {
    let failSaves = true;
    const infer = fakeSlots({
      fail: (c) => (failSaves && c.action === "save" ? new RpcError(Status.INTERNAL, "disk full") : undefined),
    });
    const p = new Parking(infer, silentLog, true);
    await p.arrive(0, "a", live);
    await p.arrive(0, "b", live);
    expect(infer.erased).toEqual(["boxmaker-a.bin"]);
    failSaves = false;
    await p.arrive(0, "c", live); // b parked
    infer.evictNext(["boxmaker-b.bin"]);
    await p.arrive(0, "d", live); // c parked; the cap takes b
    await p.arrive(0, "b", live);
    expect(infer.calls.filter((c) => c.action === "restore")).toEqual([]);
    expect(p.hasParked("b")).toBe(false);
    expect(p.hasParked("c")).toBe(true);
  });

  it("erasures that fail while inferproxy is down are done on the next slot work", async () => {
    let down = false;
    const infer = fakeSlots({ down: () => down });
    const p = new Parking(infer, silentLog, true);
    await p.arrive(0, "a", live);
    await p.arrive(0, "b", live);
    down = true;
    await p.forget("a");
    expect(infer.files.has("boxmaker-a.bin")).toBe(true);
    down = false;
    await p.arrive(0, "c", live);
    expect(infer.files.has("boxmaker-a.bin")).toBe(false);
    expect(infer.files.has("boxmaker-b.bin")).toBe(true);
  });

  it("at start-up erases the files of gone and archived sessions and learns back the live ones", async () => {
    const infer = fakeSlots();
    for (const id of ["live-1", "gone-1", "archived-1", "live-2"]) infer.files.set(parkedFileOf(id), 100);
    infer.files.set("someone-elses.bin", 1);
    const p = new Parking(infer, silentLog, true);
    const standing = (id: string) => (id.startsWith("live") ? "live" : id.startsWith("gone") ? "gone" : "archived");
    expect(await p.reconcile(standing)).toEqual({ erased: 2, kept: 2, managed: true });
    expect([...infer.files.keys()].sort()).toEqual(["boxmaker-live-1.bin", "boxmaker-live-2.bin", "someone-elses.bin"]);
    // A learnt-back session is restored when it arrives, without a save of its own first.
    await p.arrive(0, "live-1", live);
    expect(infer.calls).toEqual([{ slot: 0, action: "restore", filename: "boxmaker-live-1.bin" }]);
  });

  it("maps sessions to file names and back, and nothing else to a session", () => {
    for (const id of ["s-mx2icmrq-ac4d6343", "a", "x.y-z_1"]) expect(sessionOfParkedFile(parkedFileOf(id))).toBe(id);
    for (const f of ["boxmaker-.bin", "other.bin", "boxmaker-a.bin.tmp", "xboxmaker-a.bin"]) {
      expect(sessionOfParkedFile(f)).toBeUndefined();
    }
  });
});
