import { spawnSync } from "node:child_process";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { RealLlama, haveRealLlama, realBuild, startStackOn } from "./support/real-llama.js";
import { cliArgv } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";

/**
 * `boxmaker memory-plan` against what a real llama-server allocates loading
 * the kit's model: its own "llama_kv_cache: size = …" line (printed with -v)
 * for generated slot counts, contexts and cache types, and its refusal of a
 * cache type whose blocks do not divide the model's heads.
 */
describe.skipIf(!haveRealLlama("memory plan against the real llama-server"))(
  "real llama-server: the memory plan",
  () => {
    const tmp = tempDir("bxr-mem-");
    afterAll(() => tmp.cleanup());

    const plan = (model: string, args: string[]) => {
      const r = spawnSync(process.execPath, cliArgv(["memory-plan", model, "--json", ...args]), { encoding: "utf8" });
      return { code: r.status, json: r.stdout ? JSON.parse(r.stdout) : undefined, stderr: r.stderr };
    };

    it("the KV cache it plans is the one llama-server allocates, to the hundredth of a MiB", async () => {
      const model = realBuild!.models.tool;
      let n = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 3 }),
          fc.integer({ min: 64, max: 4000 }),
          fc.constantFrom("f16", "f32", "bf16"),
          fc.constantFrom("f16", "f32", "bf16"),
          async (slots, ctxPerSlot, k, v) => {
            const llama = new RealLlama({
              model: "tool",
              socketPath: join(tmp.dir, `llama-${n++}.sock`),
              parallel: slots,
              ctxSize: slots * ctxPerSlot,
              extraArgs: ["-v", "--flash-attn", "on", "--cache-type-k", k, "--cache-type-v", v],
            });
            try {
              await llama.start();
            } finally {
              await llama.close();
            }
            const line = llama.log
              .join("")
              .split("\n")
              .find((l) => l.includes("llama_kv_cache: size ="));
            expect(line, "llama-server printed no KV size").toBeDefined();
            const m =
              /size =\s+([\d.]+) MiB \(\s*(\d+) cells.*K \((\w+)\):\s+([\d.]+) MiB, V \((\w+)\):\s+([\d.]+) MiB/.exec(
                line!,
              );
            expect(m, line).not.toBeNull();
            const p = plan(model, [
              "--slots",
              String(slots),
              "--ctx-per-slot",
              String(ctxPerSlot),
              "--cache-type-k",
              k,
              "--cache-type-v",
              v,
            ]);
            expect(p.code, p.stderr).toBe(0);
            // The server prints MiB with two decimals (C rounds a half to even): equal within that rounding.
            const near = (bytes: number, printed: string | undefined) =>
              Math.abs(bytes / 1024 ** 2 - Number(printed)) <= 0.00501;
            expect(p.json.plan.cellsPerSlot).toBe(Number(m![2]));
            expect([m![3], m![5]]).toEqual([k, v]);
            expect(near(p.json.plan.kvBytes, m![1]), `${p.json.plan.kvBytes} B vs ${line}`).toBe(true);
            expect(near(p.json.plan.kBytes, m![4]), `${p.json.plan.kBytes} B vs ${line}`).toBe(true);
            expect(near(p.json.plan.vBytes, m![6]), `${p.json.plan.vBytes} B vs ${line}`).toBe(true);
          },
        ),
        { numRuns: 10 },
      );
      // Ten real llama-server starts: seconds each on a busy 2-core machine.
    }, 180_000);

    it("a cache type llama-server refuses for this model is refused by the plan too, saying why", async () => {
      const model = realBuild!.models.tool;
      const llama = new RealLlama({
        model: "tool",
        socketPath: join(tmp.dir, "llama-q8.sock"),
        parallel: 1,
        ctxSize: 1024,
        extraArgs: ["--flash-attn", "on", "--cache-type-k", "q8_0", "--cache-type-v", "q8_0"],
      });
      await expect(llama.start()).rejects.toThrow(
        /K cache type q8_0 with block size 32 does not divide n_embd_head_k=16/,
      );
      await llama.close();
      const p = plan(model, ["--slots", "1", "--ctx-per-slot", "1024", "--kv-type", "q8_0"]);
      expect(p.code).toBe(1);
      expect(p.json.plan.refusal).toBe(
        "llama-server refuses --cache-type-k q8_0 for this model: its K head size 16 is not a multiple of q8_0's block of 32",
      );
    });

    it("the weights are the tensor data llama-server reports as the file's size", async () => {
      const llama = new RealLlama({
        model: "answer",
        socketPath: join(tmp.dir, "llama-w.sock"),
        parallel: 1,
        ctxSize: 512,
        extraArgs: ["-v"],
      });
      try {
        await llama.start();
      } finally {
        await llama.close();
      }
      const reported = /file size\s+=\s+([\d.]+) MiB/.exec(llama.log.join(""))?.[1];
      expect(reported).toBeDefined();
      const weights = plan(realBuild!.models.answer, []).json.plan.weightsBytes;
      expect(Math.abs(weights / 1024 ** 2 - Number(reported))).toBeLessThanOrEqual(0.00501);
    });

    it("doctor plans the served model with the slots and context the self-test read, and --cap decides its exit", async () => {
      const dir = join(tmp.dir, "doctor");
      const llama = new RealLlama({
        model: "tool",
        socketPath: join(tmp.dir, "llama-doctor.sock"),
        parallel: 2,
        ctxSize: 2 * 1536,
        extraArgs: ["-v", "--flash-attn", "on", "--cache-type-k", "f16", "--cache-type-v", "f16"],
      });
      await llama.start();
      const stack = await startStackOn(llama, dir);
      try {
        const served = await stack.cli(["doctor", "--kv-type", "f16", "--json"], { timeoutMs: 60_000 });
        const memory = JSON.parse(served.stdout).memory_plan;
        expect(memory.model).toBe(realBuild!.models.tool);
        expect(memory.options).toMatchObject({ slots: 2, ctxPerSlot: 1536, kvTypeK: "f16" });
        const line = llama.log
          .join("")
          .split("\n")
          .find((l) => l.includes("llama_kv_cache: size ="))!;
        const printed = Number(/size =\s+([\d.]+) MiB/.exec(line)![1]);
        expect(Math.abs(memory.plan.kvBytes / 1024 ** 2 - printed)).toBeLessThanOrEqual(0.00501);
        // The assumed q8_0 cannot be what this server runs (its heads are 16 wide): doctor says so instead of planning it.
        const assumed = await stack.cli(["doctor"], { timeoutMs: 60_000 });
        expect(assumed.stdout).toContain("memory plan: the served model cannot run a q8_0 KV cache");
        expect(assumed.stdout).toContain("pass --kv-type");
        const tight = await stack.cli(["doctor", "--kv-type", "f16", "--cap", "64MiB"], { timeoutMs: 60_000 });
        expect(tight.stdout).toMatch(/verdict: does not fit: [\d.]+ GiB over 64\.00 MiB/);
        const roomy = await stack.cli(["doctor", "--kv-type", "f16", "--cap", "8GiB"], { timeoutMs: 60_000 });
        expect(roomy.stdout).toMatch(/verdict: fits under 8\.00 GiB/);
        expect(tight.code).toBe(roomy.code === 0 ? 1 : roomy.code);
      } finally {
        await stack.stop();
        await llama.close();
      }
    });
  },
);
