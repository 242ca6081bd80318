import { describe, expect, it } from "vitest";
import { RpcError, Status } from "@boxmaker/common";
import { Parking } from "../src/parking.js";
import { silentLog } from "./fakes.js";

describe("parking", () => {
  it("turns itself off when the server does not save slots", async () => {
    const calls: string[] = [];
    const infer = {
      async slotAction(req: { action?: number; slot?: number }) {
        calls.push(String(req.action));
        throw new RpcError(
          Status.UNIMPLEMENTED,
          "llama-server does not support this slot save: start it with --slot-save-path",
        );
      },
    };
    const p = new Parking(infer as never, silentLog, true);
    const signal = new AbortController().signal;
    await p.arrive(0, "a", signal);
    await p.arrive(0, "b", signal);
    expect(calls).toHaveLength(1);
    expect(p.on).toBe(false);
    await p.arrive(0, "a", signal);
    expect(calls).toHaveLength(1);
    expect(p.occupantOf(0)).toBe("a");
  });
});
