// `boxmaker` run the way a person runs it: the launcher executed as a program
// (an npm bin, a link in /usr/local/bin), its #! line starting Node with the
// CLI's Node flags, which must be given before Node makes its heap.
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { CLI_NODE_FLAGS, packageVersion } from "@boxmaker/common";
import { cliMain } from "../../../test/support/stack.js";
import { tempDir } from "../../../test/support/tmp.js";

describe("the boxmaker launcher", () => {
  it("runs as a program, and Node gets the CLI's flags from its #! line", () => {
    expect(readFileSync(cliMain, "utf8").split("\n")[0]).toBe(`#!/usr/bin/env -S node ${CLI_NODE_FLAGS.join(" ")}`);
    const tmp = tempDir("bx-launcher-");
    try {
      const report = join(tmp.dir, "argv.json");
      const preload = join(tmp.dir, "report.cjs");
      writeFileSync(
        preload,
        `process.on("exit", () => require("node:fs").writeFileSync(${JSON.stringify(report)}, JSON.stringify(process.execArgv)));`,
      );
      // This Node first on PATH: the one `env` finds is the one the tests run on.
      const r = spawnSync(cliMain, ["--version"], {
        env: {
          ...process.env,
          PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`,
          NODE_OPTIONS: `--require ${preload}`,
        },
        encoding: "utf8",
      });
      expect(r.stderr).toBe("");
      expect(r.status).toBe(0);
      expect(r.stdout.trim()).toBe(packageVersion(pathToFileURL(cliMain).href));
      expect(JSON.parse(readFileSync(report, "utf8"))).toEqual([...CLI_NODE_FLAGS]);
    } finally {
      tmp.cleanup();
    }
  });
});
