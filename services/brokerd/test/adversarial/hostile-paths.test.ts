import { ToolDecision } from "@boxmaker/common";
import fc from "fast-check";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rig, type Rig } from "../helpers.js";

/*
 * Paths the file system itself rejects: a name longer than NAME_MAX, a loop of
 * symlinks, a directory where a file is meant, a file where a directory is.
 * Each must end as a refusal or a tool error the model can act on, never as a
 * crash (rule tool:crashed, decision ALLOWED) that looks like the tool ran.
 */

let r: Rig;
beforeAll(async () => {
  r = await rig(
    {
      policy: {
        rules: [
          { name: "w", tool: "write_file", effect: "allow" },
          { name: "e", tool: "edit_file", effect: "allow" },
          { name: "c", tool: "run_command", effect: "allow" },
        ],
      },
    },
    ({ ws }) => {
      symlinkSync("loop-b", join(ws, "loop-a"));
      symlinkSync("loop-a", join(ws, "loop-b"));
      symlinkSync("self", join(ws, "self"));
      mkdirSync(join(ws, "dir"));
      writeFileSync(join(ws, "file.txt"), "x\n");
    },
  );
});
afterAll(() => r.cleanup());

const hostile = [
  "x".repeat(256),
  `${"y".repeat(300)}/z`,
  `dir/${"n".repeat(1000)}`,
  "loop-a",
  "loop-a/x",
  "self/x",
  "dir",
  "dir/",
  "file.txt/x",
  ".",
  "",
];

const calls = (path: string): Array<[string, Record<string, unknown>]> => [
  ["read_file", { path }],
  ["read_file", { path, start_line: 1, end_line: 2 }],
  ["list_dir", { path }],
  ["search_files", { pattern: "x", path }],
  ["write_file", { path, content: "planted" }],
  ["edit_file", { path, old_text: "x", new_text: "y" }],
  ["run_command", { command: "true", cwd: path }],
];

describe("hostile paths end as refusals, never as crashes", () => {
  it("every path tool, every listed path", async () => {
    let n = 0;
    for (const p of hostile)
      for (const [tool, args] of calls(p)) {
        const res = await r.call(tool, args);
        n++;
        expect(res.rule, `${tool} ${p.slice(0, 40)}: ${res.content}`).not.toBe("tool:crashed");
        if (res.decision === ToolDecision.ALLOWED && !["list_dir", "search_files", "run_command"].includes(tool))
          expect(res.isError, `${tool} ${p.slice(0, 40)}`).toBe(true);
      }
    expect(n).toBe(hostile.length * 7);
    // A trailing slash on a file names the file, as the shell's cat would read it.
    expect((await r.call("read_file", { path: "file.txt/" })).content).toBe("x");
  });

  it("generated long, looping and mistyped paths", async () => {
    const seg = fc.oneof(
      fc.constantFrom("loop-a", "self", "dir", "file.txt", "..", ".", ""),
      fc.string({ minLength: 1, maxLength: 8 }).filter((s) => !s.includes("/") && !s.includes("\0")),
      fc.integer({ min: 250, max: 600 }).map((k) => "q".repeat(k)),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(seg, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 0, max: 6 }),
        async (segs, k) => {
          const [tool, args] = calls(segs.join("/"))[k]!;
          const res = await r.call(tool, args);
          expect(res.rule).not.toBe("tool:crashed");
        },
      ),
      { numRuns: 300 },
    );
  });
});
