import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cliArgv } from "../../../../test/support/stack.js";

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * A `boxmaker` command in `dir` running the built CLI, as an installed one is
 * found on PATH: what a completion script calls back at each TAB. Returns a
 * PATH with `dir` first.
 */
export function boxmakerOnPath(dir: string): string {
  const bin = join(dir, "boxmaker");
  writeFileSync(bin, `#!/bin/sh\nexec ${[process.execPath, ...cliArgv([])].map(quote).join(" ")} "$@"\n`);
  chmodSync(bin, 0o755);
  return `${dir}:${process.env.PATH ?? "/usr/bin:/bin"}`;
}
