// The bench runner against benches written to misbehave: one that hangs past
// its limit with a child of its own, one that throws, one that exits in the
// middle, one that skips, and well-behaved ones in JavaScript and TypeScript
// that write to stdout. The run must end, report each as what it was, keep
// --json's stdout one JSON document, and leave nothing running or on disk.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../support/tmp.js";

const RUN = join(import.meta.dirname, "run.mjs");

interface BenchResult {
  bench: string;
  status: "ok" | "failed" | "skipped";
  duration_s: number;
  time_limit_s: number;
  metrics: Record<string, { value: number; unit: string }>;
  error?: string;
  reason?: string;
}
interface Doc {
  soak: boolean;
  total_s: number;
  failed: string[];
  benches: BenchResult[];
  metrics: Record<string, { value: number; unit: string }>;
}

const BENCHES: Record<string, string> = {
  // Leaves a grandchild behind and never finishes; records where both live.
  "a-hangs.bench.mjs": `
    import { spawn } from "node:child_process";
    import { writeFileSync } from "node:fs";
    import { tmpdir } from "node:os";
    import { join } from "node:path";
    export const timeLimitS = 2;
    export default async function (emit) {
      const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
      const scratch = join(tmpdir(), "scratch.txt");
      writeFileSync(scratch, "left behind");
      writeFileSync(process.env.RECORD, JSON.stringify({ grandchild: child.pid, scratch }));
      emit("before_hang", 1, "count");
      await new Promise(() => setInterval(() => {}, 1000));
    }`,
  "b-throws.bench.mjs": `
    export default async function () { throw new Error("bench broke on purpose"); }`,
  "c-exits.bench.mjs": `
    export default async function (emit) { emit("half", 0.5, "x"); process.exit(3); }`,
  "d-skips.bench.mjs": `
    export default async function (_emit, { skip }) { skip("no widget built (npm run widget:build)"); }`,
  "e-ok.bench.mjs": `
    export const timeLimitS = 30;
    export const soakTimeLimitS = 90;
    export default async function (emit, { soak }) {
      console.log("a bench's own output, not the document");
      emit("answer", 41.99999, "ms");
      emit("soak", soak ? 1 : 0, "bool");
    }`,
  "f-typed.bench.ts": `
    type Emit = (metric: string, value: number, unit: string) => void;
    export default async function (emit: Emit): Promise<void> {
      const n: number = [1, 2, 3].reduce((a, b) => a + b, 0);
      emit("sum", n, "count");
    }`,
};

const alive = (pid: number): boolean => {
  try {
    // A zombie is dead; /proc says so where kill(0) would not.
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};

describe("bench runner", () => {
  const tmp = tempDir("bxrt-");
  const record = join(tmp.dir, "record.json");
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [RUN, `--dir=${tmp.dir}`, ...args], {
      encoding: "utf8",
      env: { ...process.env, RECORD: record },
      timeout: 120_000,
    });
  let full: ReturnType<typeof run>;
  let doc: Doc;
  const result = (name: string) => doc.benches.find((b) => b.bench === name)!;

  beforeAll(() => {
    for (const [f, src] of Object.entries(BENCHES)) writeFileSync(join(tmp.dir, f), src);
    // As in the repository, whose package.json makes a .ts bench an ES module.
    writeFileSync(join(tmp.dir, "package.json"), '{"type":"module"}');
    full = run("--json");
    doc = JSON.parse(full.stdout) as Doc;
  }, 120_000);
  afterAll(() => tmp.cleanup());

  it("runs every bench and prints one JSON document on stdout, failing the run", () => {
    expect(full.status).toBe(1);
    expect(doc.benches.map((b) => b.bench)).toEqual(["a-hangs", "b-throws", "c-exits", "d-skips", "e-ok", "f-typed"]);
    expect(doc.failed).toEqual(["a-hangs", "b-throws", "c-exits"]);
    expect(full.stderr).toContain("a bench's own output, not the document");
  });

  it("kills a bench at its own limit, with its children, and goes on", () => {
    const a = result("a-hangs");
    expect(a).toMatchObject({ status: "failed", time_limit_s: 2, metrics: { before_hang: { value: 1 } } });
    expect(a.error).toBe("exceeded its time limit of 2 s and was killed");
    expect(full.stderr).toContain("bench a-hangs FAILED after");
    const { grandchild, scratch } = JSON.parse(readFileSync(record, "utf8")) as { grandchild: number; scratch: string };
    expect(alive(grandchild)).toBe(false);
    expect(existsSync(scratch)).toBe(false);
  });

  it("tells a throw, an exit in the middle and a skip apart", () => {
    expect(result("b-throws").status).toBe("failed");
    expect(result("b-throws").error).toContain("bench broke on purpose");
    expect(result("c-exits")).toMatchObject({
      status: "failed",
      error: "exited (code 3) before finishing",
      metrics: { half: { value: 0.5, unit: "x" } },
    });
    expect(result("d-skips")).toMatchObject({ status: "skipped", reason: "no widget built (npm run widget:build)" });
  });

  it("keeps each metric under its bench, and flat as bench.metric", () => {
    expect(result("e-ok")).toMatchObject({ status: "ok", time_limit_s: 30 });
    expect(doc.metrics["e-ok.answer"]).toEqual({ value: 42, unit: "ms" });
    expect(doc.metrics["f-typed.sum"]).toEqual({ value: 6, unit: "count" });
    expect(doc.soak).toBe(false);
    for (const b of doc.benches) expect(b.duration_s).toBeGreaterThan(0);
    expect(doc.total_s).toBeGreaterThanOrEqual(Math.max(...doc.benches.map((b) => b.duration_s)));
  });

  it("runs the named benches alone, with --soak's limits", () => {
    const r = run("--json", "--soak", "e-ok");
    expect(r.status).toBe(0);
    const d = JSON.parse(r.stdout) as Doc;
    expect(d.benches.map((b) => b.bench)).toEqual(["e-ok"]);
    expect(d).toMatchObject({ soak: true, failed: [], benches: [{ time_limit_s: 90 }] });
    expect(d.metrics["e-ok.soak"]?.value).toBe(1);
  });

  it("refuses a bench name that does not exist, naming those that do", () => {
    const r = run("e-okk");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("no bench named e-okk");
    expect(r.stderr).toContain("e-ok, f-typed");
  });

  it("prints a table and each bench's time without --json", () => {
    const r = run("e-ok", "d-skips");
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^e-ok\s+answer\s+42\s+ms\s*$/m);
    expect(r.stdout).toMatch(/^d-skips\s+skipped\s+[\d.]+\s+120\s*$/m);
    expect(r.stdout).toMatch(/^total [\d.]+ s$/m);
  });
});
