import { writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { GgufError, readGgufHeader } from "../src/memory/gguf-metadata.js";
import { memoryPlan, modelFacts, parseSize, type PlanOptions } from "../src/memory/memory-plan.js";
import { renderMemoryPlan } from "../src/render/memory-plan.js";
import { tempDir } from "../../../test/support/tmp.js";

/** A GGUF v3 file: the header llama.cpp writes (keys, tensor infos), then `dataBytes` of tensor data. */
type Kv = [string, "u32" | "str" | "f32" | "u32[]" | "str[]", unknown];
function gguf(kv: Kv[], tensors: { name: string; dims: number[] }[] = [], dataBytes = 0): Buffer {
  const parts: Buffer[] = [];
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    parts.push(b);
  };
  const u64 = (n: number | bigint) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    parts.push(b);
  };
  const str = (s: string) => {
    u64(Buffer.byteLength(s));
    parts.push(Buffer.from(s));
  };
  parts.push(Buffer.from("GGUF"));
  u32(3);
  u64(tensors.length);
  u64(kv.length);
  for (const [key, type, value] of kv) {
    str(key);
    if (type === "u32") {
      u32(4);
      u32(value as number);
    } else if (type === "f32") {
      u32(6);
      const b = Buffer.alloc(4);
      b.writeFloatLE(value as number);
      parts.push(b);
    } else if (type === "str") {
      u32(8);
      str(value as string);
    } else if (type === "u32[]") {
      u32(9);
      u32(4);
      u64((value as number[]).length);
      for (const n of value as number[]) u32(n);
    } else {
      u32(9);
      u32(8);
      u64((value as string[]).length);
      for (const s of value as string[]) str(s);
    }
  }
  for (const t of tensors) {
    str(t.name);
    u32(t.dims.length);
    for (const d of t.dims) u64(d);
    u32(1);
    u64(0);
  }
  const head = Buffer.concat(parts);
  const pad = (32 - (head.length % 32)) % 32;
  return Buffer.concat([head, Buffer.alloc(pad), Buffer.alloc(dataBytes)]);
}

/** A model shaped like a 30B-A3B mixture of experts: 48 layers, 4 KV heads of 128. */
const moeKv = (extra: Kv[] = []): Kv[] => [
  ["general.architecture", "str", "qwen3moe"],
  ["general.name", "str", "moe-like"],
  ["qwen3moe.block_count", "u32", 48],
  ["qwen3moe.embedding_length", "u32", 2048],
  ["qwen3moe.attention.head_count", "u32", 32],
  ["qwen3moe.attention.head_count_kv", "u32", 4],
  ["qwen3moe.attention.key_length", "u32", 128],
  ["qwen3moe.attention.value_length", "u32", 128],
  ["qwen3moe.context_length", "u32", 262144],
  ["tokenizer.ggml.tokens", "str[]", Array.from({ length: 6000 }, (_, i) => `tok${i}`)],
  ...extra,
];

const stack: PlanOptions = {
  slots: 3,
  ctxPerSlot: 131072,
  kvTypeK: "q8_0",
  kvTypeV: "q8_0",
  computeMarginBytes: 2 * 1024 ** 3,
  capBytes: 0,
};

describe("the memory plan", () => {
  const tmp = tempDir("bx-mem-");
  afterAll(() => tmp.cleanup());
  let n = 0;
  const file = (b: Buffer) => {
    const p = join(tmp.dir, `m${n++}.gguf`);
    writeFileSync(p, b);
    return p;
  };

  it("reads layers, KV heads and head sizes from the header, and the weights as the tensor data", () => {
    const p = file(gguf(moeKv(), [{ name: "token_embd.weight", dims: [2048, 6000] }], 1_000_000));
    const f = modelFacts(readGgufHeader(p), p);
    expect(f).toMatchObject({
      architecture: "qwen3moe",
      name: "moe-like",
      layers: 48,
      headSizeK: 128,
      headSizeV: 128,
      weightsBytes: 1_000_000,
      trainedContext: 262144,
      kvUnknown: "",
    });
    expect(f.kvHeads).toEqual(Array(48).fill(4));
  });

  it("the stack's default layout of q8_0 KV costs what llama.cpp allocates; f16 twice as much, less a block's scale", () => {
    const p = file(gguf(moeKv(), [], 4096));
    const f = modelFacts(readGgufHeader(p), p);
    const q8 = memoryPlan(f, stack);
    // 393,216 cells × 48 layers × 4 heads × 128 × (34 bytes per 32 elements), for K and for V.
    expect(q8.cells).toBe(393_216);
    expect(q8.kBytes).toBe((393_216 * 48 * 4 * 128 * 34) / 32);
    expect(q8.kvBytes).toBe(2 * q8.kBytes);
    expect(q8.kvBytes / 1024 ** 3).toBe(19.125);
    const f16 = memoryPlan(f, { ...stack, kvTypeK: "f16", kvTypeV: "f16" });
    expect(f16.kvBytes / q8.kvBytes).toBeCloseTo(32 / 17, 6);
    expect(q8.totalBytes).toBe(4096 + q8.kvBytes + stack.computeMarginBytes);
  });

  it("under a cap: fits with what is to spare, or says how far over and what one slot costs", () => {
    const p = file(gguf(moeKv(), [], 1024));
    const f = modelFacts(readGgufHeader(p), p);
    const over = memoryPlan(f, { ...stack, capBytes: parseSize("20GiB") });
    expect(over.headroomBytes).toBeLessThan(0);
    const text = renderMemoryPlan(p, f, { ...stack, capBytes: parseSize("20GiB") }, over);
    expect(text).toMatch(/verdict: does not fit: 1\.13 GiB over 20\.00 GiB; each slot's context costs 6\.38 GiB/);
    const two = memoryPlan(f, { ...stack, slots: 2, capBytes: parseSize("20GiB") });
    expect(renderMemoryPlan(p, f, { ...stack, slots: 2, capBytes: parseSize("20GiB") }, two)).toContain(
      "verdict: fits under 20.00 GiB, 5.25 GiB to spare",
    );
  });

  it("per-layer KV heads (a hybrid's recurrent layers hold none), a compressed KV and a sliding window are said, not guessed", () => {
    const heads = Array.from({ length: 48 }, (_, i) => (i % 4 === 3 ? 4 : 0));
    const hybrid = file(
      gguf(
        moeKv([["qwen3moe.attention.head_count_kv", "u32[]", heads]]).filter(
          (k, i, a) => a.findIndex((x) => x[0] === k[0]) === i || k[1] === "u32[]",
        ),
      ),
    );
    const h = modelFacts(readGgufHeader(hybrid), hybrid);
    expect(h.kvHeads.filter((x) => x > 0)).toHaveLength(12);
    expect(memoryPlan(h, stack).kvBytes).toBe(
      memoryPlan(modelFacts(readGgufHeader(file(gguf(moeKv()))), "x"), stack).kvBytes / 4,
    );
    expect(h.notes).toContain("recurrent layers' state (per slot, not per token) is not counted");
    const mla = file(gguf(moeKv([["qwen3moe.attention.kv_lora_rank", "u32", 512]])));
    const m = memoryPlan(modelFacts(readGgufHeader(mla), mla), stack);
    expect(m.kvBytes).toBe(0);
    expect(m.notes[0]).toMatch(/^KV cache not counted: qwen3moe compresses its KV cache/);
    const swa = file(gguf(moeKv([["qwen3moe.attention.sliding_window", "u32", 4096]])));
    expect(modelFacts(readGgufHeader(swa), swa).notes[0]).toMatch(/upper bound/);
  });

  it("a damaged or hostile file is one clear error, never a hang or an allocation it asks for", () => {
    const good = gguf(moeKv(), [{ name: "w", dims: [4, 4] }], 64);
    fc.assert(
      fc.property(
        fc.oneof(
          // Cut anywhere in the header.
          fc.integer({ min: 0, max: good.length - 65 }).map((at) => good.subarray(0, at)),
          // A byte of the header replaced.
          fc.tuple(fc.integer({ min: 0, max: good.length - 65 }), fc.integer({ min: 0, max: 255 })).map(([at, b]) => {
            const c = Buffer.from(good);
            c[at] = b;
            return c;
          }),
          // A length field of the first key set to something enormous.
          fc.bigInt({ min: 1n << 40n, max: (1n << 64n) - 1n }).map((len) => {
            const c = Buffer.from(good);
            c.writeBigUInt64LE(len, 24);
            return c;
          }),
          fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.concat([Buffer.from("GGUF"), Buffer.from(a)])),
        ),
        (bytes) => {
          const p = file(bytes);
          try {
            modelFacts(readGgufHeader(p), p);
          } catch (err) {
            // Either the header is unusable, or it parsed and lacks a key the plan needs: one line naming the file.
            expect((err as Error).message.startsWith(p)).toBe(true);
            expect((err as Error).message).not.toContain("\n");
            if (!(err instanceof GgufError)) expect((err as Error).message).toMatch(/: no [\w.]+ in its header$/);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("sizes say what they mean: GiB and GB differ, and nonsense is refused", () => {
    expect(parseSize("104GiB")).toBe(104 * 1024 ** 3);
    expect(parseSize("69 GB")).toBe(69e9);
    expect(parseSize("512MiB")).toBe(512 * 1024 ** 2);
    expect(parseSize("1073741824")).toBe(1024 ** 3);
    expect(() => parseSize("lots")).toThrow(/not a size: "lots"/);
    expect(() => parseSize("5 parsecs")).toThrow(/not a size/);
  });
});
