// The code cache the CLI runs its CommonJS libraries with (code-cache.cjs):
// real child processes with Node's compile cache on, a real bundle beside the
// real code-cache.cjs, real files in the cache directory. What a person would
// notice: the library works whatever the cache holds, a second start uses the
// cache, and a cache someone else could write is never run.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../../../test/support/stack.js";
import { tempDir } from "../../../test/support/tmp.js";

const CODE_CACHE = join(repoRoot, "services/cli/code-cache.cjs");
const LIB = "lib-ABCD1234.cjs";
const isRoot = process.getuid?.() === 0;

let tmp: ReturnType<typeof tempDir>;
let bundleDir: string;
let cacheRoot: string;

beforeEach(() => {
  tmp = tempDir("bx-code-cache-");
  bundleDir = join(tmp.dir, "bundle");
  cacheRoot = join(tmp.dir, "compile-cache");
  mkdirSync(bundleDir);
  copyFileSync(CODE_CACHE, join(bundleDir, "code-cache.cjs"));
  // A library with functions that run only when called: what the cache made after a run is for.
  writeFileSync(
    join(bundleDir, LIB),
    `"use strict";
exports.sum = (xs) => xs.reduce((a, b) => a + b, 0);
exports.table = (n) => Array.from({ length: n }, (_, i) => exports.sum([i, i * i]));
`,
  );
  writeFileSync(
    join(bundleDir, "run.cjs"),
    `require("node:module").enableCompileCache();
// Asked to, says its pid and waits for a byte on stdin: time for a test to plant files named after it.
if (process.env.PAUSE) {
  process.stderr.write(process.pid + "\\n");
  require("node:fs").readSync(0, Buffer.alloc(1));
}
const seen = [];
require("node:diagnostics_channel").subscribe("boxmaker:code-cache:load", (m) => seen.push(m.cache));
const lib = require("./code-cache.cjs")(${JSON.stringify(LIB)});
const again = require("./code-cache.cjs")(${JSON.stringify(LIB)});
process.stdout.write(JSON.stringify({ cache: seen, table: lib.table(4), same: lib === again }));
if (process.env.FAIL) process.exitCode = 6;
`,
  );
});
afterEach(() => tmp.cleanup());

/** The environment with Node's compile cache on, in this test's directory (Node reads any NODE_DISABLE_COMPILE_CACHE as off). */
function childEnv(): NodeJS.ProcessEnv {
  const { NODE_DISABLE_COMPILE_CACHE: _, ...env } = process.env;
  return { ...env, NODE_COMPILE_CACHE: cacheRoot };
}

/** One start of a process that uses the library: what the cache did, and what the library answered. */
function start(env: NodeJS.ProcessEnv = {}): { cache: string[]; table: number[]; same: boolean } {
  const r = spawnSync(process.execPath, [join(bundleDir, "run.cjs")], {
    env: { ...childEnv(), ...env },
    encoding: "utf8",
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

/** The directory the caches go to: under Node's compile cache directory for this Node, flags and user. */
function cacheDir(): string {
  const [perNode] = readdirSync(cacheRoot);
  return join(cacheRoot, perNode!, "boxmaker");
}
const cacheFiles = () => readdirSync(cacheDir()).filter((f) => f.endsWith(".v8cache"));

const ANSWER = [0, 2, 6, 12];

describe("the CLI's code cache", () => {
  it("is made by the first start and used by the next, readable by this user only", () => {
    expect(start()).toEqual({ cache: ["miss"], table: ANSWER, same: true });
    const [file] = cacheFiles();
    expect(file).toMatch(/^lib-ABCD1234-.+\.v8cache$/);
    expect(statSync(join(cacheDir(), file!)).mode & 0o777).toBe(0o600);
    expect(statSync(cacheDir()).mode & 0o777).toBe(0o700);
    expect(start()).toEqual({ cache: ["hit"], table: ANSWER, same: true });
  });

  it("is written only by a run that succeeded: a failed one's cache would hold its error path", () => {
    const r = spawnSync(process.execPath, [join(bundleDir, "run.cjs")], {
      env: { ...childEnv(), FAIL: "1" },
      encoding: "utf8",
    });
    expect(r.status).toBe(6);
    expect(JSON.parse(r.stdout).cache).toEqual(["miss"]);
    expect(start().cache).toEqual(["miss"]);
    expect(start().cache).toEqual(["hit"]);
  });

  it("a corrupt or truncated cache is refused by V8 and made again; the library works every time", () => {
    start();
    const file = join(cacheDir(), cacheFiles()[0]!);
    const good = readFileSync(file);
    for (const bad of [Buffer.from("not a code cache"), good.subarray(0, good.length >> 1), Buffer.alloc(0)]) {
      writeFileSync(file, bad, { mode: 0o600 });
      const first = start();
      expect(first.table).toEqual(ANSWER);
      expect(first.cache[0]).toMatch(/^(rejected|miss)$/);
      expect(start()).toEqual({ cache: ["hit"], table: ANSWER, same: true });
    }
  });

  it("a cache file others can write is never used, and is replaced by this user's own", () => {
    start();
    const file = join(cacheDir(), cacheFiles()[0]!);
    // Whoever can write the file could have put code in it: it reads as no cache at all.
    chmodSync(file, 0o666);
    expect(start()).toEqual({ cache: ["miss"], table: ANSWER, same: true });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(start().cache).toEqual(["hit"]);
  });

  it.runIf(isRoot)("a cache file another user owns is never used (as root: chown)", () => {
    start();
    const file = join(cacheDir(), cacheFiles()[0]!);
    chownSync(file, 65534, 65534);
    expect(start().cache).toEqual(["miss"]);
    expect(statSync(file).uid).toBe(0);
  });

  it("a cache directory others can write turns the cache off, and nothing is written into it", () => {
    start();
    const file = join(cacheDir(), cacheFiles()[0]!);
    chmodSync(cacheDir(), 0o777);
    const before = readFileSync(file);
    expect(start()).toEqual({ cache: ["off"], table: ANSWER, same: true });
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it("a link planted where the cache is written is not written through", async () => {
    start();
    const file = join(cacheDir(), cacheFiles()[0]!);
    writeFileSync(file, "garbage", { mode: 0o600 });
    const victim = join(tmp.dir, "victim");
    writeFileSync(victim, "precious");
    // The start that rewrites the cache writes `<cache>.<its pid>.tmp` first: a link planted at that name.
    const proc = spawn(process.execPath, [join(bundleDir, "run.cjs")], {
      env: { ...childEnv(), PAUSE: "1" },
    });
    let out = "";
    proc.stdout.on("data", (b: Buffer) => (out += b));
    const [pidLine] = (await once(proc.stderr, "data")) as [Buffer];
    symlinkSync(victim, `${file}.${pidLine.toString().trim()}.tmp`);
    proc.stdin.end("x");
    const [code] = (await once(proc, "exit")) as [number];
    expect(code).toBe(0);
    expect(JSON.parse(out).table).toEqual(ANSWER);
    expect(readFileSync(victim, "utf8")).toBe("precious");
  });

  it("is off with Node's compile cache (NODE_DISABLE_COMPILE_CACHE)", () => {
    expect(start({ NODE_DISABLE_COMPILE_CACHE: "1" })).toEqual({ cache: ["off"], table: ANSWER, same: true });
    expect(readdirSync(tmp.dir)).not.toContain("compile-cache");
  });

  it("keeps the caches of the three newest other builds of a library, and drops the rest", () => {
    start();
    const dir = cacheDir();
    // Five caches older builds left (other content hashes), oldest first.
    for (let i = 0; i < 5; i++) {
      const f = join(dir, `lib-OLDBUILD${i}-${process.versions.v8}.v8cache`);
      writeFileSync(f, "old", { mode: 0o600 });
      utimesSync(f, 1_000_000 + i, 1_000_000 + i);
    }
    writeFileSync(join(dir, `other-KEEPME00-${process.versions.v8}.v8cache`), "another library's", { mode: 0o600 });
    // A rebuilt lib: the same library under a new content hash.
    copyFileSync(join(bundleDir, LIB), join(bundleDir, "lib-NEWBUILD.cjs"));
    writeFileSync(
      join(bundleDir, "run.cjs"),
      readFileSync(join(bundleDir, "run.cjs"), "utf8").replaceAll(LIB, "lib-NEWBUILD.cjs"),
    );
    expect(start().cache).toEqual(["miss"]);
    expect(cacheFiles().sort()).toEqual(
      [
        `lib-ABCD1234-${process.versions.v8}.v8cache`,
        `lib-NEWBUILD-${process.versions.v8}.v8cache`,
        `lib-OLDBUILD3-${process.versions.v8}.v8cache`,
        `lib-OLDBUILD4-${process.versions.v8}.v8cache`,
        `other-KEEPME00-${process.versions.v8}.v8cache`,
      ].sort(),
    );
  });
});
