import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { cliArgv } from "../../../test/support/stack.js";

/** A usage error is one line naming the command's own help, and exit 2; --help still prints the help. */
describe("usage errors", () => {
  const cli = (args: string[]) => spawnSync(process.execPath, cliArgv(args), { encoding: "utf8" });

  it.each([
    [["ls", "--bogus"], "boxmaker ls: unknown option '--bogus'; see `boxmaker ls --help`"],
    [["frobnicate"], "boxmaker: unknown command 'frobnicate'; see `boxmaker --help`"],
    [["chta"], "boxmaker: unknown command 'chta' (Did you mean chat?); see `boxmaker --help`"],
    [
      ["schedule", "add"],
      "boxmaker schedule add: missing required argument 'cron'; see `boxmaker schedule add --help`",
    ],
    [["--socket", "ls", "ls", "--nope"], "boxmaker ls: unknown option '--nope'; see `boxmaker ls --help`"],
    [
      ["memory-plan", "m.gguf", "--slots"],
      "boxmaker memory-plan: option '--slots <n>' argument missing; see `boxmaker memory-plan --help`",
    ],
  ])("%j", (args, line) => {
    const r = cli(args);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`${line}\n`);
  });

  it("--help is the whole help on stdout, exit 0", () => {
    const r = cli(["ls", "--help"]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Usage: boxmaker ls \[options\]/);
  });
});
