import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { dirUsage, usageGrowth } from "./dir-usage.js";
import { isGenericFailure, type LoggedMessage, lostTurns, unansweredTurns } from "./soak-ledger.js";
import { tempDir } from "./tmp.js";

// The soak bench fails on what these find; a check that found nothing would let every run pass.
describe("the soak bench's checks", () => {
  const msg = (role: string, content: string): LoggedMessage => ({ role, json: JSON.stringify({ role, content }) });
  const logged = new Map<string, LoggedMessage[] | undefined>([
    ["s1", [msg("user", "[m-1] hi"), msg("assistant", "hello"), msg("user", "[m-2] again")]],
    ["s2", undefined],
  ]);

  it("an acknowledged message missing from its log, or from a log that cannot be read, is lost", () => {
    const acked = new Map([
      ["s1", new Set(["[m-1]", "[m-2]", "[m-3]"])],
      ["s2", new Set(["[m-9]"])],
    ]);
    expect(lostTurns(acked, logged)).toEqual([
      { sessionId: "s1", marker: "[m-3]" },
      { sessionId: "s2", marker: "[m-9]" },
    ]);
  });

  it("a marker is matched whole: [m-1] is not [m-12]", () => {
    const only12 = new Map([["s", [msg("user", "[m-12] hi")]]]);
    expect(lostTurns(new Map([["s", new Set(["[m-1]"])]]), only12)).toHaveLength(1);
  });

  it("a completed turn with no assistant message before the next user message has lost its answer", () => {
    const done = new Map([["s1", new Set(["[m-1]", "[m-2]"])]]);
    expect(unansweredTurns(done, logged)).toEqual([{ sessionId: "s1", marker: "[m-2]" }]);
  });

  it("a failure message that names no cause is generic; one that names it is not", () => {
    const generic = [
      "",
      "Internal error",
      "13 INTERNAL: ",
      "error",
      "unknown",
      "Connection dropped",
      "read ECONNRESET",
    ];
    for (const m of generic) expect(isGenericFailure(m), m).toBe(true);
    expect(isGenericFailure("llama-server is not reachable at unix:/run/llama.sock")).toBe(false);
    expect(isGenericFailure("the input goes to brokerd's blob store, and read ECONNRESET")).toBe(false);
  });

  it("directory usage counts each directory's whole subtree, folds fan-out directories, and diffs against before", () => {
    const tmp = tempDir("bxdu-");
    try {
      mkdirSync(join(tmp.dir, "blobs", "ab"), { recursive: true });
      writeFileSync(join(tmp.dir, "top"), "12345");
      writeFileSync(join(tmp.dir, "blobs", "ab", "x"), "123");
      const before = dirUsage(tmp.dir, { fold: (n) => n === "ab" });
      expect(Object.fromEntries(before)).toEqual({ "": { bytes: 8, files: 2 }, blobs: { bytes: 3, files: 1 } });
      mkdirSync(join(tmp.dir, "logs"));
      writeFileSync(join(tmp.dir, "logs", "l"), "1");
      const growth = usageGrowth(before, dirUsage(tmp.dir, { fold: (n) => n === "ab" }));
      expect(growth.get("logs")).toEqual({ bytes: 1, files: 1 });
      expect(growth.get("blobs")).toEqual({ bytes: 0, files: 0 });
    } finally {
      tmp.cleanup();
    }
  });
});
