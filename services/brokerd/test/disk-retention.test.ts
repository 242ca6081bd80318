import { afterEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "@boxmaker/common";
import { AuditLog, type AuditRecord } from "../src/audit.js";
import { Disclosure } from "../src/disclosure.js";
import { tempDir } from "../../../test/support/tmp.js";

const log = createLogger("disk-retention-test", "silent");
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});
function dir(): string {
  const t = tempDir("bxret-");
  cleanups.push(t.cleanup);
  return t.dir;
}

const rec = (i: number, pad: number): AuditRecord => ({
  kind: "call",
  session: `s-${i}`,
  tool: "read_file",
  decision: "allowed",
  rule: "x".repeat(pad),
  duration_ms: i,
  result_bytes: 0,
  is_error: false,
});

/** The trail as kept: oldest rotated file first, the current one last; every line parsed. */
function trail(d: string): { files: string[]; seq: number[] } {
  const files = readdirSync(d)
    .filter((n) => n.startsWith("audit.jsonl"))
    .sort((a, b) => suffix(b) - suffix(a));
  const seq: number[] = [];
  for (const f of files) {
    for (const line of readFileSync(join(d, f), "utf8").split("\n")) {
      if (line) seq.push((JSON.parse(line) as { duration_ms: number }).duration_ms);
    }
  }
  return { files, seq };
}
const suffix = (name: string) => Number(name.slice("audit.jsonl".length + 1) || 0);

describe("audit log rotation (real files)", () => {
  it("keeps the newest lines, whole and in order, in at most keep_files + 1 files under the size bound", async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 300, max: 4000 }),
        fc.integer({ min: 0, max: 4 }),
        fc.array(fc.integer({ min: 0, max: 600 }), { minLength: 1, maxLength: 120 }),
        async (rotateBytes, keepFiles, pads) => {
          runs++;
          const d = dir();
          const audit = new AuditLog(join(d, "audit.jsonl"), log, { rotateBytes, keepFiles });
          for (const [i, pad] of pads.entries()) audit.record(rec(i, pad));
          await audit.close();
          const { files, seq } = trail(d);
          expect(files.length).toBeLessThanOrEqual(keepFiles + 1);
          // A contiguous tail of what was written, ending with the last record, nothing torn.
          const n = pads.length;
          expect(seq).toEqual(Array.from({ length: seq.length }, (_, k) => n - seq.length + k));
          // Each file passes the bound by at most the line that crossed it.
          const longest = Math.max(...pads) + 300;
          for (const f of files) expect(statSync(join(d, f)).size).toBeLessThan(rotateBytes + longest);
          // With room for everything, nothing is lost.
          const written = pads.reduce((t, p) => t + p + 200, 0);
          if (written < rotateBytes) expect(seq.length).toBe(n);
        },
      ),
      { numRuns: 60 },
    );
    expect(runs).toBe(60);
  });

  it("a trail already over the bound at start is rotated before the first new line", async () => {
    const d = dir();
    const path = join(d, "audit.jsonl");
    writeFileSync(path, `${JSON.stringify(rec(0, 5000))}\n`);
    const audit = new AuditLog(path, log, { rotateBytes: 4096, keepFiles: 2 });
    audit.record(rec(1, 0));
    await audit.close();
    expect(trail(d)).toEqual({ files: ["audit.jsonl.1", "audit.jsonl"], seq: [0, 1] });
  });

  it("keep_files 0 keeps only the current file", async () => {
    const d = dir();
    const audit = new AuditLog(join(d, "audit.jsonl"), log, { rotateBytes: 500, keepFiles: 0 });
    for (let i = 0; i < 50; i++) audit.record(rec(i, 50));
    await audit.close();
    const { files, seq } = trail(d);
    expect(files).toEqual(["audit.jsonl"]);
    expect(seq.at(-1)).toBe(49);
    expect(seq.length).toBeLessThan(50);
  });
});

describe("disclosure compaction at start (real files)", () => {
  const DAY = 86_400_000;

  it("rewrites the file to one line per session, dropping sessions shown nothing for retention_days", () => {
    const d = dir();
    const path = join(d, "disclosure.jsonl");
    const now = Date.now();
    const day0 = new Disclosure(path, 90, now - 200 * DAY);
    day0.disclose("old", ["mcp.a"], now - 200 * DAY);
    day0.disclose("recent", ["mcp.a"], now - 200 * DAY);
    day0.disclose("recent", ["mcp.b"], now - 10 * DAY); // a later disclosure keeps the whole session
    day0.disclose("fresh", ["mcp.c"], now);
    day0.disclose("fresh", ["mcp.d"], now);
    // A line written before disclosures were dated is kept (counted from now), and a torn tail ignored.
    writeFileSync(path, `${readFileSync(path, "utf8")}{"session":"undated","names":["mcp.e"]}\n{"session":"to`);
    expect(readFileSync(path, "utf8").split("\n").filter(Boolean)).toHaveLength(7);

    const later = new Disclosure(path, 90, now);
    expect(later.compacted).toEqual({ sessions: 3, dropped: 1, linesBefore: 7 });
    expect(later.has("old", "mcp.a")).toBe(false);
    expect(["mcp.a", "mcp.b"].every((n) => later.has("recent", n))).toBe(true);
    expect(later.has("fresh", "mcp.d") && later.has("undated", "mcp.e")).toBe(true);
    const lines = readFileSync(path, "utf8").split("\n").filter(Boolean);
    expect(lines.map((l) => (JSON.parse(l) as { session: string }).session).sort()).toEqual([
      "fresh",
      "recent",
      "undated",
    ]);
    expect(existsSync(`${path}.tmp`)).toBe(false);

    // Compacted once, the next start finds nothing to rewrite and the same disclosures.
    const mtime = statSync(path).mtimeMs;
    const again = new Disclosure(path, 90, now + 1);
    expect(again.compacted).toEqual({ sessions: 3, dropped: 0, linesBefore: 3 });
    expect(statSync(path).mtimeMs).toBe(mtime);
    expect(again.has("recent", "mcp.b")).toBe(true);
  });

  it("for generated histories, keeps exactly the disclosures of sessions seen within the retention", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            session: fc.constantFrom("a", "b", "c", "d"),
            name: fc.constantFrom("t1", "t2", "t3"),
            ageDays: fc.integer({ min: 0, max: 120 }),
          }),
          { maxLength: 40 },
        ),
        fc.integer({ min: 0, max: 100 }),
        (events, retention) => {
          const d = dir();
          const path = join(d, "disclosure.jsonl");
          const now = Date.now();
          const w = new Disclosure(path);
          for (const e of events) w.disclose(e.session, [e.name], now - e.ageDays * DAY);
          const r = new Disclosure(path, retention, now);
          for (const s of ["a", "b", "c", "d"]) {
            const mine = events.filter((e) => e.session === s);
            // A session's age is its first disclosure of each name that was new (later repeats add no line).
            const lastSeen = Math.min(...firstOfEachName(mine).map((e) => e.ageDays));
            const kept = mine.length > 0 && (retention === 0 || lastSeen <= retention);
            for (const e of mine) expect(r.has(s, e.name)).toBe(kept);
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});

function firstOfEachName<T extends { name: string }>(events: T[]): T[] {
  const seen = new Set<string>();
  return events.filter((e) => !seen.has(e.name) && seen.add(e.name));
}
