import { describe, expect, it } from "vitest";
import { encodeFrame, FrameError, FrameReader } from "../src/grpc-frames.js";

/** A small deterministic PRNG (mulberry32), so a failure names its seed. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("gRPC message framing", () => {
  it("reads back every message whole and in order, however the stream is cut", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const r = rng(seed);
      const messages = Array.from({ length: 1 + Math.floor(r() * 8) }, () =>
        Buffer.from(Array.from({ length: Math.floor(r() ** 3 * 70_000) }, () => Math.floor(r() * 256))),
      );
      const wire = Buffer.concat(messages.map((m) => encodeFrame(m)));
      const reader = new FrameReader(1 << 20);
      const got: Buffer[] = [];
      for (let at = 0; at < wire.length; ) {
        // Cuts of one byte (inside a prefix), a few bytes, and whole frames at once.
        const n = Math.max(1, Math.floor(r() < 0.3 ? r() * 6 : r() * 20_000));
        got.push(...reader.push(wire.subarray(at, at + n)));
        at += n;
      }
      expect(
        got.map((b) => b.toString("hex")),
        `seed ${seed}`,
      ).toEqual(messages.map((m) => m.toString("hex")));
      expect(reader.pendingBytes, `seed ${seed}`).toBe(0);
    }
  });

  it("holds a message cut off at the end as pending bytes, not as a message", () => {
    const reader = new FrameReader(1024);
    const frame = encodeFrame(Buffer.from("hello"));
    expect(reader.push(frame.subarray(0, 7))).toEqual([]);
    expect(reader.pendingBytes).toBe(7);
    expect(reader.push(frame.subarray(7)).map(String)).toEqual(["hello"]);
    expect(reader.pendingBytes).toBe(0);
  });

  it("refuses a message over the limit from its prefix alone, and a compressed one", () => {
    const big = Buffer.alloc(5);
    big.writeUInt32BE(2048, 1);
    const err = (() => {
      try {
        new FrameReader(1024).push(big);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(FrameError);
    expect((err as FrameError).kind).toBe("too_large");
    const compressed = encodeFrame(Buffer.from("x"));
    compressed[0] = 1;
    expect(() => new FrameReader(1024).push(compressed)).toThrow(/compressed/);
  });
});
