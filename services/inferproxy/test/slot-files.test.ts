import { afterEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { existsSync, mkdirSync, readdirSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RpcError, Status, createLogger } from "@boxmaker/common";
import { SlotFiles } from "../src/slots/slot-files.js";
import { tempDir } from "../../../test/support/tmp.js";

const log = createLogger("slot-files-test", "silent");
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function dir(): string {
  const t = tempDir("bxsf-");
  cleanups.push(t.cleanup);
  return t.dir;
}

/** A real file of `bytes` bytes, last used `usedMs` (its mtime). */
function put(d: string, name: string, bytes: number, usedMs: number): void {
  writeFileSync(join(d, name), Buffer.alloc(bytes, 1));
  utimesSync(join(d, name), usedMs / 1000, usedMs / 1000);
}

const sizeOf = (d: string) =>
  readdirSync(d)
    .filter((n) => n.startsWith("boxmaker-"))
    .reduce((t, n) => t + statSync(join(d, n)).size, 0);

describe("slot-save directory cap (least recently used first)", () => {
  it("erases exactly the least recently used files, the one just saved last, for generated directories", async () => {
    const file = fc.record({ bytes: fc.integer({ min: 0, max: 4096 }), age: fc.integer({ min: 1, max: 10_000 }) });
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.tuple(fc.stringMatching(/^[a-z0-9]{1,8}$/), file), {
          minLength: 1,
          maxLength: 12,
          selector: ([n]) => n,
        }),
        fc.integer({ min: 0, max: 30_000 }),
        fc.nat(),
        async (files, cap, pick) => {
          runs++;
          const d = dir();
          const now = Date.now();
          // Ages are distinct so "least recently used" has one answer.
          for (const [i, [n, f]] of files.entries()) put(d, `boxmaker-s-${n}.bin`, f.bytes, now - f.age * 1000 - i);
          // Never counted, never erased: not Boxmaker's.
          put(d, "operator-notes.bin", 50_000, now - 1e9);
          const saved = `boxmaker-s-${files[pick % files.length]![0]}.bin`;
          utimesSync(join(d, saved), new Date(), new Date());
          const before = new Map(
            readdirSync(d).map((n) => [n, { size: statSync(join(d, n)).size, used: statSync(join(d, n)).mtimeMs }]),
          );

          const evicted = await new SlotFiles(d, cap, log).afterSave(saved);

          const left = new Set(readdirSync(d));
          expect(left.has("operator-notes.bin")).toBe(true);
          expect(sizeOf(d)).toBeLessThanOrEqual(cap);
          for (const e of evicted) expect(left.has(e)).toBe(false);
          // Nothing erased that was not needed: putting back the last one erased would pass the cap.
          const last = evicted.at(-1);
          if (last) expect(sizeOf(d) + before.get(last)!.size).toBeGreaterThan(cap);
          // Every file kept (but the one just saved) was used more recently than every file erased.
          const keptOthers = [...left].filter((n) => n.startsWith("boxmaker-") && n !== saved);
          for (const e of evicted.filter((n) => n !== saved)) {
            for (const k of keptOthers) expect(before.get(k)!.used).toBeGreaterThan(before.get(e)!.used);
          }
          // The file just saved goes only when it alone is over the cap.
          expect(left.has(saved)).toBe(before.get(saved)!.size <= cap);
        },
      ),
      { numRuns: 150 },
    );
    expect(runs).toBe(150);
  });

  it("a restore counts as use: the file restored outlives one saved after it", async () => {
    const d = dir();
    const files = new SlotFiles(d, 2500, log);
    const now = Date.now();
    put(d, "boxmaker-a.bin", 1000, now - 30_000);
    put(d, "boxmaker-b.bin", 1000, now - 20_000);
    await files.touch("boxmaker-a.bin");
    put(d, "boxmaker-c.bin", 1000, now);
    expect(await files.afterSave("boxmaker-c.bin")).toEqual(["boxmaker-b.bin"]);
    expect(readdirSync(d).sort()).toEqual(["boxmaker-a.bin", "boxmaker-c.bin"]);
  });

  it("two saves enforcing the cap at once leave the directory within it", async () => {
    const d = dir();
    const files = new SlotFiles(d, 3000, log);
    for (let i = 0; i < 6; i++) put(d, `boxmaker-${i}.bin`, 1000, Date.now() - (10 - i) * 1000);
    const [x, y] = await Promise.all([files.afterSave("boxmaker-4.bin"), files.afterSave("boxmaker-5.bin")]);
    expect(sizeOf(d)).toBeLessThanOrEqual(3000);
    expect([...x, ...y].sort()).toEqual(["boxmaker-0.bin", "boxmaker-1.bin", "boxmaker-2.bin"]);
  });

  it("a symlink under a Boxmaker name is neither followed nor counted at its target's size", async () => {
    const d = dir();
    const outside = join(dir(), "precious.bin");
    writeFileSync(outside, Buffer.alloc(10_000));
    symlinkSync(outside, join(d, "boxmaker-link.bin"));
    put(d, "boxmaker-a.bin", 100, Date.now());
    const files = new SlotFiles(d, 1000, log);
    expect(await files.afterSave("boxmaker-a.bin")).toEqual([]);
    const erased = await files.erase(["boxmaker-link.bin"]);
    expect(erased.erased).toBe(1);
    expect(existsSync(outside)).toBe(true);
    expect(statSync(outside).size).toBe(10_000);
  });
});

describe("erasing parked files", () => {
  it("erases the named files, counts only those that were there, and lists the rest", async () => {
    const d = dir();
    put(d, "boxmaker-a.bin", 10, Date.now());
    put(d, "boxmaker-b.bin", 20, Date.now());
    const r = await new SlotFiles(d, 1e9, log).erase(["boxmaker-a.bin", "boxmaker-gone.bin", "boxmaker-a.bin"]);
    expect(r.erased).toBe(1);
    expect(r.files.map((f) => f.filename)).toEqual(["boxmaker-b.bin"]);
    expect(r.totalBytes).toBe(20);
  });

  it("refuses generated names that are not Boxmaker's own files, touching nothing", async () => {
    const d = dir();
    mkdirSync(join(d, "sub"));
    put(d, "keep.bin", 1, Date.now());
    put(join(d, "sub"), "boxmaker-x.bin", 1, Date.now());
    const files = new SlotFiles(d, 1e9, log);
    const hostile = fc.oneof(
      fc.string(),
      fc.constantFrom("../keep.bin", "sub/boxmaker-x.bin", "boxmaker-/../keep.bin", "keep.bin", "boxmaker-.bin"),
      fc.string().map((s) => `boxmaker-${s}/x.bin`),
      fc.string().map((s) => `boxmaker-${s}\0.bin`),
    );
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(hostile, async (name) => {
        if (/^boxmaker-[A-Za-z0-9._-]+\.bin$/.test(name)) return;
        const err = await files.erase([name]).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(RpcError);
        expect((err as RpcError).status).toBe(Status.INVALID_ARGUMENT);
        refused++;
      }),
      { numRuns: 400 },
    );
    expect(refused).toBeGreaterThan(300);
    expect(existsSync(join(d, "keep.bin"))).toBe(true);
    expect(existsSync(join(d, "sub", "boxmaker-x.bin"))).toBe(true);
  });

  it("with no directory configured it lists nothing and says why, and refuses to erase", async () => {
    const files = new SlotFiles("", 1e9, log);
    expect(await files.list()).toMatchObject({ managed: false, unmanagedReason: "slot_files.dir is not set" });
    const err = (await files.erase(["boxmaker-a.bin"]).catch((e: unknown) => e)) as RpcError;
    expect(err.status).toBe(Status.FAILED_PRECONDITION);
    const missing = await new SlotFiles(join(dir(), "nope"), 1e9, log).list();
    expect(missing.managed).toBe(false);
    expect(missing.unmanagedReason).toMatch(/cannot read .*nope/);
  });
});
