import { ToolDecision } from "@boxmaker/common";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { rig, type Rig } from "../helpers.js";

/**
 * A real race: a child process flips workspace directory `d` between a real
 * directory and a symlink to the outside directory in a tight loop, while the
 * broker reads, lists, searches and writes through `d` thousands of times.
 * Every call must either act inside the workspace or be refused: no outside
 * content in any result, no file created outside.
 */
const RACE_ITERATIONS = Number(process.env.BX_RACE_ITERATIONS ?? 2400);
const OUTSIDE_MARK = "OUTSIDE-CONTENT-7f3a";

let r: Rig;
let flipper: ChildProcess;
const raceCounts = { calls: 0, escapes: 0, refused: 0, flips: 0 };
let approvals = 0;

const FLIP = `
const fs = require("node:fs");
const [ws, outside, countFile] = process.argv.slice(1);
const d = ws + "/d", real = ws + "/d.real", link = ws + "/d.link";
fs.symlinkSync(outside, link);
const kind = (p) => { try { return fs.lstatSync(p).isSymbolicLink() ? "link" : "dir"; } catch { return ""; } };
// A write that lands while d is away creates a fresh d (brokerd makes missing directories), and the
// cycle would then fail forever: put things back (the stray d goes) and flip on.
const recover = () => {
  try {
    if (kind(real) === "dir") {
      if (kind(d) === "link") { if (kind(link)) fs.unlinkSync(d); else fs.renameSync(d, link); }
      else if (kind(d) === "dir") fs.rmSync(d, { recursive: true, force: true });
      fs.renameSync(real, d);
    }
    if (!kind(link)) fs.symlinkSync(outside, link);
  } catch {}
};
let n = 0;
for (;;) {
  try { fs.renameSync(d, real); fs.renameSync(link, d); fs.renameSync(d, link); fs.renameSync(real, d); n++; } catch { recover(); }
  if ((n & 255) === 0 && n > 0) fs.writeFileSync(countFile, String(n));
}
`;

beforeAll(async () => {
  r = await rig(
    {
      policy: {
        rules: [
          { name: "writes", tool: "write_file", effect: "allow" },
          { name: "review", tool: "write_file", effect: "ask", paths: ["d/s*"] },
        ],
      },
    },
    ({ ws, outside }) => {
      mkdirSync(join(ws, "d"));
      for (let i = 0; i < 5; i++) writeFileSync(join(ws, "d", `f${i}.txt`), `inside ${i}\nneedle inside\n`);
      for (let i = 0; i < 5; i++)
        writeFileSync(join(outside, `f${i}.txt`), `${OUTSIDE_MARK} ${i}\nneedle ${OUTSIDE_MARK}\n`);
      mkdirSync(join(outside, "sub"));
      writeFileSync(join(outside, "sub", "g.txt"), `${OUTSIDE_MARK}\n`);
    },
  );
  const flips = join(r.dir, "flips");
  flipper = spawn(process.execPath, ["-e", FLIP, r.ws, r.outside, flips], { stdio: "ignore" });
  // The calls start once the directory is really flipping (the flipper writes its count every 256 flips).
  await vi.waitFor(() => expect(existsSync(flips)).toBe(true), { timeout: 10_000, interval: 10 });
});

afterAll(async () => {
  if (flipper && flipper.exitCode === null) flipper.kill("SIGKILL");
  await r?.cleanup();
});

describe("a directory flipping to a symlink during calls", () => {
  it(`read_file, list_dir, search_files, writes and approved staged writes never reach outside (${RACE_ITERATIONS} calls)`, async () => {
    const outsideBefore = readdirSync(r.outside).sort();
    const kinds = [
      "read",
      "list",
      "write",
      "read",
      "list",
      "approve",
      "read",
      "list",
      "write",
      "read",
      "list",
      "approve",
      "read",
      "list",
      "write",
      "search",
    ] as const;
    const batch = 8;
    for (let i = 0; i < RACE_ITERATIONS; i += batch) {
      const calls = [];
      for (let j = i; j < Math.min(i + batch, RACE_ITERATIONS); j++) {
        const k = kinds[j % kinds.length]!;
        if (k === "read") calls.push(r.call("read_file", { path: `d/f${j % 5}.txt` }));
        else if (k === "list") calls.push(r.call("list_dir", { path: "d" }));
        else if (k === "write") calls.push(r.call("write_file", { path: `d/w${j}.txt`, content: "x" }));
        else if (k === "approve") {
          // Staged now, approved a moment later while the directory keeps flipping.
          calls.push(
            r.call("write_file", { path: `d/s${j}.txt`, content: "approved" }).then(async (staged) => {
              if (staged.decision !== ToolDecision.STAGED) return staged;
              approvals++;
              const done = await r.broker.decideProposal(staged.proposalId, true, "");
              return { ...staged, content: done.result, isError: done.state !== "applied" };
            }),
          );
        } else calls.push(r.call("search_files", { pattern: "needle|OUTSIDE", path: j % 2 ? "d" : "." }));
      }
      for (const res of await Promise.all(calls)) {
        raceCounts.calls++;
        if (res.content.includes(OUTSIDE_MARK) || /\bsub\/|g\.txt/.test(res.content)) raceCounts.escapes++;
        if (res.isError) raceCounts.refused++;
      }
    }
    flipper.kill("SIGKILL");
    raceCounts.flips = Number(readFileSync(join(r.dir, "flips"), "utf8")) || 0;
    expect(raceCounts.calls).toBe(RACE_ITERATIONS);
    expect(raceCounts.escapes).toBe(0);
    expect(readdirSync(r.outside).sort()).toEqual(outsideBefore);
    // The race was real: the directory flipped many times and some calls were refused mid-flight.
    expect(raceCounts.flips).toBeGreaterThan(100);
    expect(approvals).toBeGreaterThan(50);
    expect(raceCounts.refused).toBeGreaterThan(0);
    expect(raceCounts.refused).toBeLessThan(RACE_ITERATIONS);
  }, 120_000);
});
