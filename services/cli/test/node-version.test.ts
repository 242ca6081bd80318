// `boxmaker` on a Node too old for it says so in one line instead of dying on a
// SyntaxError from deep inside its modules (Node 20: "does not provide an export
// named 'enableCompileCache'"). The built entry is run as a person runs it.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { spawnSync } from "node:child_process";
import { cliMain } from "../../../test/support/stack.js";

/** node:sqlite (the daemons' state directory lock) is behind a flag before 22.13, and on 23 before 23.4. */
const tooOld = (v: string): boolean => {
  const [major, minor] = v.split(".").map(Number) as [number, number];
  return major < 22 || (major === 22 && minor < 13) || (major === 23 && minor < 4);
};
const refusal = (v: string) => `Boxmaker needs Node ≥ 22.13 (≥ 23.4 on Node 23); this is ${v}\n`;

/** A node on this machine older than 22.13 (Debian's is 20), if any. */
function oldNode(): { path: string; version: string } | undefined {
  const found = spawnSync("sh", ["-c", "which -a node nodejs; ls /usr/bin/node /usr/local/bin/node 2>/dev/null"], {
    encoding: "utf8",
  });
  for (const path of new Set(found.stdout.split("\n").filter(Boolean))) {
    const r = spawnSync(path, ["-p", "process.versions.node"], { encoding: "utf8" });
    const version = r.stdout.trim();
    if (r.status === 0 && tooOld(version)) return { path, version };
  }
  return undefined;
}

const old = oldNode();
if (!old) console.warn("node version check on an old Node: skipped, no Node older than 22.13 on this machine");

/** Runs the entry under this Node with process.versions.node set to `version` before the entry's first line. */
function runAs(version: string, args: string[]) {
  const preload = `data:text/javascript,Object.defineProperty(process,"versions",{value:{...process.versions,node:${JSON.stringify(version)}}})`;
  return spawnSync(process.execPath, ["--import", preload, cliMain, ...args], { encoding: "utf8" });
}

describe("boxmaker on an old Node", () => {
  it.skipIf(!old)("the real old Node: one line naming what is needed and what this is, exit 1, nothing else", () => {
    for (const args of [["demo"], ["--version"], ["status"]]) {
      const r = spawnSync(old!.path, [cliMain, ...args], { encoding: "utf8" });
      expect(r.stderr).toBe(refusal(old!.version));
      expect(r.stdout).toBe("");
      expect(r.status).toBe(1);
    }
  });

  it("every version without node:sqlite unflagged is refused and every other one runs (a real process per version)", () => {
    const version = fc
      .tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 20 }))
      .map(([a, b, c]) => `${a}.${b}.${c}`);
    const boundary = [
      "22.12.99",
      "22.13.0",
      "21.99.0",
      "23.0.0",
      "23.3.9",
      "23.4.0",
      "24.0.0",
      "22.0.0",
      "100.0.0",
      "20.20.2",
    ];
    fc.assert(
      fc.property(version, (v) => {
        const r = runAs(v, ["--version"]);
        if (tooOld(v)) {
          expect(r.stderr).toBe(refusal(v));
          expect(r.status).toBe(1);
        } else {
          expect(r.stderr).toBe("");
          expect(r.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
          expect(r.status).toBe(0);
        }
      }),
      { examples: boundary.map((b) => [b]), numRuns: 12 },
    );
  }, 120_000);
});
