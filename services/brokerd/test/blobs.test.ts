import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { BlobPinOverCap, BlobStore } from "../src/blobs.js";
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

  it("refuses a pin that would hold more than the cap, keeping the owner's earlier pins", () => {
    const blobs = new BlobStore(join(t.dir, "blobs"), { capBytes: 2_500 });
    const a = blobs.put("a".repeat(1000));
    const b = blobs.put("b".repeat(1000));
    blobs.pin("s-1", [a, b]);
    const c = blobs.put("c".repeat(1200)); // kept, over the cap, as the blob just stored
    expect(() => blobs.pin("s-2", [c])).toThrow(BlobPinOverCap);
    expect(() => blobs.pin("s-2", [c])).toThrow(/would keep 3200 bytes pinned, more than the blob store's cap of 2500/);
    expect(() => blobs.pin("s-1", [a, b, c])).toThrow(BlobPinOverCap);
    expect(blobs.stat()).toMatchObject({ pinned: 2, pinnedBytes: 2000 });
    // Shrinking a set, or pinning within the cap, is fine.
    blobs.pin("s-1", [b]);
    blobs.pin("s-2", [c]);
    expect(blobs.stat()).toMatchObject({ pinned: 2, pinnedBytes: 2200 });
  });

  it("never lets pins hold the store above its cap (generated puts, pins and releases)", () => {
    const op = fc.oneof(
      fc.record({ put: fc.integer({ min: 0, max: 8 }), size: fc.integer({ min: 1, max: 1500 }) }),
      fc.record({
        pin: fc.constantFrom("s-1", "s-2", "s-3"),
        which: fc.uniqueArray(fc.integer({ min: 0, max: 8 }), { maxLength: 6 }),
      }),
      fc.record({ restart: fc.constant(true) }),
    );
    let refused = 0;
    let ops = 0;
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 60 }), fc.integer({ min: 500, max: 6000 }), (steps, cap) => {
        const d = tempDir("bxbp-");
        try {
          const dir = join(d.dir, "blobs");
          let blobs = new BlobStore(dir, { capBytes: cap });
          const text = (k: number, size: number) => `${k}:`.padEnd(size, String.fromCharCode(97 + (k % 26)));
          const hashes = new Map<number, string>();
          let pins = new Map<string, string[]>();
          // The blob just stored is kept even over the cap, until the next put.
          let lastPut = 0;
          for (const step of steps) {
            ops++;
            if ("put" in step) {
              const body = text(step.put, step.size);
              hashes.set(step.put, blobs.put(body));
              lastPut = Buffer.byteLength(body);
            } else if ("pin" in step) {
              // Some refs not stored yet (pinned before they are put), as after an eviction.
              const refs = step.which.map((k) => hashes.get(k) ?? BlobStore.parseRef(sha256Of(text(k, 700))));
              try {
                blobs.pin(step.pin, refs);
                pins = new Map(pins).set(step.pin, refs);
              } catch (err) {
                expect(err).toBeInstanceOf(BlobPinOverCap);
                refused++;
              }
            } else {
              blobs = new BlobStore(dir, { capBytes: cap });
            }
            // What the operator's cap promises: the store on disk stays within it, pins included.
            expect(blobs.stat().bytes).toBeLessThanOrEqual(cap + lastPut);
          }
          // A pin that was accepted holds: its stored blobs are still there.
          for (const refs of pins.values()) for (const h of refs) if (blobs.has(h)) expect(blobs.get(h)).toBeTruthy();
        } finally {
          d.cleanup();
        }
      }),
      { numRuns: 150 },
    );
    expect(refused).toBeGreaterThan(0);
    expect(ops).toBeGreaterThan(500);
  });
});

function sha256Of(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}
