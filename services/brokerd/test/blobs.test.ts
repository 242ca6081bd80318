import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BlobStore } from "../src/blobs.js";
import { tempDir } from "../../../test/support/tmp.js";

describe("blob store upkeep", () => {
  let t: ReturnType<typeof tempDir>;
  beforeEach(() => (t = tempDir("bxb-")));
  afterEach(() => t.cleanup());

  it("evicts the least recently used unpinned blobs above the cap, never a pinned one", () => {
    let now = 1_000_000;
    const blobs = new BlobStore(join(t.dir, "blobs"), { capBytes: 3_000, now: () => now++ });
    const a = blobs.put("a".repeat(1000));
    const b = blobs.put("b".repeat(1000));
    const c = blobs.put("c".repeat(1000));
    blobs.pin("s-1", [`blob:sha256:${a}`]);
    blobs.get(b); // b is now more recent than c
    const d = blobs.put("d".repeat(1000));
    expect(blobs.has(a)).toBe(true); // pinned, though the oldest
    expect(blobs.has(c)).toBe(false); // least recently used
    expect(blobs.has(b) && blobs.has(d)).toBe(true);
    expect(blobs.stat()).toMatchObject({
      blobs: 3,
      bytes: 3000,
      capBytes: 3000,
      pinned: 1,
      evicted: 1,
      evictedBytes: 1000,
    });
    expect(() => blobs.get(c)).toThrow(/no blob .* is stored: it was evicted/);
    // Same text twice: one blob.
    expect(blobs.putEx("d".repeat(1000))).toMatchObject({ hash: d, existed: true });
    expect(blobs.stat().blobs).toBe(3);
  });

  it("keeps the index and the pins across a restart", () => {
    const dir = join(t.dir, "blobs");
    const one = new BlobStore(dir, { capBytes: 2_000 });
    const a = one.put("x".repeat(1500));
    one.pin("s-1", [a]);
    const two = new BlobStore(dir, { capBytes: 2_000 });
    expect(two.stat()).toMatchObject({ blobs: 1, bytes: 1500, pinned: 1 });
    two.put("y".repeat(1500)); // over the cap, but a is pinned and the new one is kept
    expect(two.has(a)).toBe(true);
    two.pin("s-1", []);
    two.put("z".repeat(100));
    expect(existsSync(join(dir, a.slice(0, 2), a))).toBe(false);
  });
});
