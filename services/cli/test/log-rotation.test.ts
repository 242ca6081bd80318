import {
  appendFileSync,
  mkdirSync,
  readdirSync,
  rmdirSync,
  readFileSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_LOG_ROTATION, planRotation, type LogRotationLimits } from "../src/log-rotation-plan.js";
import { LogRotator } from "../src/supervisor/log-rotator.js";
import { lastWords } from "../src/supervisor/last-words.js";
import { planUp } from "../src/supervisor/up-options.js";
import { logFileSizes } from "../src/log-files.js";
import { logRows } from "../src/render/log-rows.js";
import { UsageError } from "../src/errors.js";
import { tempDir } from "../../../test/support/tmp.js";

const limits: LogRotationLimits = { maxBytes: 100, keep: 3, compress: true };

describe("which files a rotation touches", () => {
  it("leaves a log within its limit alone", () => {
    expect(planRotation("brokerd.log", 100, ["brokerd.log", "brokerd.log.1"], limits)).toEqual([]);
  });

  it("first rotation: the log is copied to .1 and emptied, nothing else", () => {
    expect(planRotation("brokerd.log", 101, ["brokerd.log", "loopd.log"], limits)).toEqual([
      { op: "copy-truncate", from: "brokerd.log", to: "brokerd.log.1" },
    ]);
  });

  it("with all N kept: the oldest goes, the rest shift up from the oldest down, the new .2 is compressed", () => {
    const names = ["brokerd.log", "brokerd.log.1", "brokerd.log.2.gz", "brokerd.log.3.gz", "loopd.log.1"];
    expect(planRotation("brokerd.log", 500, names, limits)).toEqual([
      { op: "remove", file: "brokerd.log.3.gz" },
      { op: "rename", from: "brokerd.log.2.gz", to: "brokerd.log.3.gz" },
      { op: "rename", from: "brokerd.log.1", to: "brokerd.log.2" },
      { op: "copy-truncate", from: "brokerd.log", to: "brokerd.log.1" },
      { op: "gzip", from: "brokerd.log.2", to: "brokerd.log.2.gz" },
    ]);
  });

  it("removes files past a lowered --log-keep, and compresses plain ones a run without compression left", () => {
    const names = ["a.log", "a.log.1", "a.log.2", "a.log.3", "a.log.4.gz", "a.log.9", "a.log.1.part", "a.logx.1"];
    expect(planRotation("a.log", 101, names, { ...limits, keep: 2 })).toEqual([
      { op: "remove", file: "a.log.2" },
      { op: "remove", file: "a.log.3" },
      { op: "remove", file: "a.log.4.gz" },
      { op: "remove", file: "a.log.9" },
      { op: "rename", from: "a.log.1", to: "a.log.2" },
      { op: "copy-truncate", from: "a.log", to: "a.log.1" },
      { op: "gzip", from: "a.log.2", to: "a.log.2.gz" },
    ]);
  });

  it("without compression shifts plain files; keeping none only empties the log", () => {
    expect(planRotation("a.log", 101, ["a.log", "a.log.1"], { ...limits, compress: false })).toEqual([
      { op: "rename", from: "a.log.1", to: "a.log.2" },
      { op: "copy-truncate", from: "a.log", to: "a.log.1" },
    ]);
    expect(planRotation("a.log", 101, ["a.log", "a.log.1", "a.log.2.gz"], { ...limits, keep: 0 })).toEqual([
      { op: "remove", file: "a.log.1" },
      { op: "remove", file: "a.log.2.gz" },
      { op: "truncate", file: "a.log" },
    ]);
  });
});

describe("rotating real files", () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => (tmp = tempDir("bx-logrot-")));
  afterEach(() => tmp.cleanup());

  const line = (i: number) => `{"level":30,"msg":"line ${String(i).padStart(4, "0")}"}\n`;

  it("keeps N older files of the newest lines, .2 on compressed, and nothing past N", async () => {
    const log = join(tmp.dir, "brokerd.log");
    const errors: string[] = [];
    const r = new LogRotator({ maxBytes: 1024, keep: 3, compress: true }, (_l, m) => errors.push(m));
    r.watch(log);
    r.watch(join(tmp.dir, "not-started-yet.log"));
    let written = "";
    for (let i = 0; i < 200; i++) {
      const l = line(i);
      appendFileSync(log, l);
      written += l;
      if (i % 20 === 19) await r.check();
    }
    expect(errors).toEqual([]);
    expect(readdirSync(tmp.dir).sort()).toEqual([
      "brokerd.log",
      "brokerd.log.1",
      "brokerd.log.2.gz",
      "brokerd.log.3.gz",
    ]);
    expect(r.rotationsOf(log)).toBeGreaterThanOrEqual(4);
    // Oldest to newest, the kept files are the end of what was written, nothing lost or repeated (no writer raced).
    const kept = [
      gunzipSync(readFileSync(`${log}.3.gz`)).toString(),
      gunzipSync(readFileSync(`${log}.2.gz`)).toString(),
      readFileSync(`${log}.1`, "utf8"),
      readFileSync(log, "utf8"),
    ].join("");
    expect(written.endsWith(kept)).toBe(true);
    expect(kept.length).toBeLessThan(written.length);
    for (const f of ["brokerd.log", "brokerd.log.1"])
      expect(statSync(join(tmp.dir, f)).size).toBeLessThanOrEqual(1024 + 20 * 40);

    const sizes = logFileSizes({
      dir: tmp.dir,
      names: ["brokerd.log", "loopd.log"],
      maxBytes: 1024,
      keep: 3,
      compress: true,
    });
    expect(sizes.map((s) => [s.name, s.older])).toEqual([
      ["brokerd.log", 3],
      ["loopd.log", 0],
    ]);
    expect(sizes[0]!.bytes).toBe(statSync(log).size);
  });

  it("says a lasting failure once, not at every check, and rotates once it is gone", async () => {
    const log = join(tmp.dir, "x.log");
    writeFileSync(log, "x".repeat(200));
    // Something not a log where the oldest kept file is: removing it fails.
    mkdirSync(`${log}.1`);
    const errors: string[] = [];
    const r = new LogRotator({ maxBytes: 100, keep: 1, compress: false }, (l, m) => errors.push(`${l}: ${m}`));
    r.watch(log);
    await r.check();
    await r.check();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(log);
    rmdirSync(`${log}.1`);
    await r.check();
    expect(readFileSync(`${log}.1`, "utf8")).toBe("x".repeat(200));
    expect(statSync(log).size).toBe(0);
  });
});

describe("a daemon's last words after its log was rotated", () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => (tmp = tempDir("bx-lastw-")));
  afterEach(() => tmp.cleanup());

  it("reads the log from its start when it is now shorter than where the run began, neither throwing nor reading a stranger's line", () => {
    const log = join(tmp.dir, "loopd.log");
    writeFileSync(log, `${"earlier run\n".repeat(500)}--- boxmaker up: starting node loopd\n`);
    const from = statSync(log).size;
    // Rotated (copied and truncated) while this run was writing; then it said why it stopped.
    truncateSync(log, 0);
    appendFileSync(log, '{"level":50,"msg":"x"}\nfatal: the state directory is in use by pid 7\n');
    expect(statSync(log).size).toBeLessThan(from);
    expect(lastWords(log, from)).toBe("fatal: the state directory is in use by pid 7");
    truncateSync(log, 0);
    expect(lastWords(log, from)).toBeUndefined();
  });
});

describe("--log-max-size, --log-keep, --no-log-compress", () => {
  const host = { env: { XDG_RUNTIME_DIR: "/run/user/7", PATH: "" }, cwd: "/w", home: "/h", tmp: "/tmp", uid: 7 };
  const plan = (f: Parameters<typeof planUp>[0]) => planUp({ llamaSim: true, sandbox: "none", ...f }, host).logRotation;

  it("default to 16 MiB × 4 compressed, and take sizes in binary units", () => {
    expect(plan({})).toEqual(DEFAULT_LOG_ROTATION);
    expect(DEFAULT_LOG_ROTATION).toEqual({ maxBytes: 16 * 1024 * 1024, keep: 4, compress: true });
    expect(plan({ logMaxSize: "64K", logKeep: "2", logCompress: false })).toEqual({
      maxBytes: 65536,
      keep: 2,
      compress: false,
    });
    expect(plan({ logMaxSize: "1.5MiB" }).maxBytes).toBe(1572864);
    expect(plan({ logMaxSize: "2g" }).maxBytes).toBe(2 * 1024 ** 3);
    expect(plan({ logMaxSize: "70000" }).maxBytes).toBe(70000);
    expect(plan({ logKeep: "0" }).keep).toBe(0);
  });

  it("refuse what is not a size or too small to be worth a rotation", () => {
    for (const v of ["", "16X", "-1M", "100", "lots"]) expect(() => plan({ logMaxSize: v }), v).toThrow(UsageError);
    expect(() => plan({ logKeep: "-1" })).toThrow(/--log-keep needs a non-negative integer/);
  });
});

describe("status's logs rows", () => {
  const plain = { bold: (t: string) => t, dim: (t: string) => t } as Parameters<typeof logRows>[1];
  it("show each log against its limit, the older files, and the flags that set them", () => {
    const logs = { dir: "/s/logs", names: ["brokerd.log"], maxBytes: 65536, keep: 2, compress: true };
    const rows = logRows(
      { kind: "up", logs, sizes: [{ name: "brokerd.log", bytes: 2048, older: 2, olderBytes: 70000 }] },
      plain,
    );
    expect(rows).toEqual([
      ["brokerd.log", "2.0 KiB of 64.0 KiB; 2 older files, 68.4 KiB"],
      [
        "rotation",
        "past 64.0 KiB a log is moved to .1 … .2 (.2 on gzip-compressed), the oldest deleted: at most 192.0 KiB a process (boxmaker up --log-max-size, --log-keep, --no-log-compress)",
      ],
      ["dir", "/s/logs"],
    ]);
    expect(logRows({ kind: "journal" }, plain)[0]![1]).toMatch(/journal.*journald's own limits/);
  });
});
