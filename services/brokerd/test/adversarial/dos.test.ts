import { ToolDecision } from "@boxmaker/common";
import { afterEach, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdirSync, openSync, closeSync, ftruncateSync, readdirSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { compileGlob, PathMatcher } from "../../src/policy/glob.js";
import { DEFAULT_SECRET_PATTERNS } from "../../src/config.js";
import { rig, type Rig } from "../helpers.js";
import { requires, toolPath } from "../../../../test/support/requirements.js";

let r: Rig | undefined;
afterEach(async () => {
  await r?.cleanup();
  r = undefined;
});

/** Runs `f` while a 10 ms timer checks the event loop is never stalled longer than `maxStallMs`. */
async function noStall<T>(maxStallMs: number, f: () => Promise<T>): Promise<{ value: T; worstStall: number }> {
  let last = performance.now();
  let worst = 0;
  const t = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 10);
    last = now;
  }, 10);
  try {
    const value = await f();
    worst = Math.max(worst, performance.now() - last - 10);
    expect(worst).toBeLessThan(maxStallMs);
    return { value, worstStall: worst };
  } finally {
    clearInterval(t);
  }
}

describe("inputs that used to freeze brokerd", () => {
  it("deeply nested paths and crafted globs match in linear time", () => {
    const deep = Array.from({ length: 4000 }, () => "a").join("/");
    const m = new PathMatcher(DEFAULT_SECRET_PATTERNS, { ignoreCase: true });
    let t0 = performance.now();
    for (let i = 0; i < 20; i++) m.matches(deep, `/ws/${deep}`);
    expect(performance.now() - t0).toBeLessThan(2000);
    const evil = compileGlob("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b");
    t0 = performance.now();
    expect(evil.test("a".repeat(5000))).toBe(false);
    expect(compileGlob("**/**/**/**/**/**/**/x").test(`${"a/".repeat(2000)}y`)).toBe(false);
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it("refuses over-long and over-deep paths before touching the disk", async () => {
    r = await rig();
    const res = await r.call("read_file", { path: `${"a/".repeat(3000)}x` });
    expect(res).toMatchObject({ decision: ToolDecision.DENIED, rule: expect.stringMatching(/^limit:path-/) });
  });

  it("a crafted search_files glob does not stall the event loop", async () => {
    r = await rig(undefined, ({ ws }) => {
      for (let i = 0; i < 200; i++) writeFileSync(join(ws, `${"a".repeat(200)}${i}.txt`), "x\n");
    });
    const rr = r;
    const { value } = await noStall(500, () =>
      rr.call("search_files", { pattern: "x", glob: "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b" }),
    );
    expect(value.content).toMatch(/no matches/);
    const long = await rr.call("search_files", { pattern: "x", glob: "*".repeat(300) });
    expect(long).toMatchObject({ decision: ToolDecision.DENIED, rule: "limit:glob-length" });
  });

  it("FIFOs, sockets and devices are refused without blocking (read, ranged read, list, write, search)", async () => {
    r = await rig({ policy: { rules: [{ tool: "write_file", effect: "allow" }] } }, ({ ws }) => {
      execFileSync("mkfifo", [join(ws, "pipe")]);
    });
    const rr = r;
    await noStall(300, async () => {
      const read = await rr.call("read_file", { path: "pipe" });
      expect(read.isError).toBe(true);
      expect(read.content).toMatch(/named pipe/);
      expect((await rr.call("read_file", { path: "pipe", start_line: 1, end_line: 2 })).content).toMatch(/named pipe/);
      const w = await rr.call("write_file", { path: "pipe", content: "x" });
      expect(w.isError).toBe(true);
      expect((await rr.call("list_dir", {})).content).toMatch(/pipe {2}\(special file\)/);
      expect((await rr.call("search_files", { pattern: "x" })).isError).toBe(false);
    });
  });

  it("a line-range read of a 2 GB file with no newline stays bounded in memory and keeps the loop free", async () => {
    r = await rig(undefined, ({ ws }) => {
      const fd = openSync(join(ws, "huge.bin"), "w");
      writeSync(fd, Buffer.alloc(1024 * 1024, "a"));
      ftruncateSync(fd, 2 * 1024 * 1024 * 1024); // the rest sparse: no newline anywhere
      closeSync(fd);
    });
    const rr = r;
    const before = process.memoryUsage().rss;
    const { value } = await noStall(300, () => rr.call("read_file", { path: "huge.bin", start_line: 1, end_line: 1 }));
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);
    expect(value.content).toMatch(/scan stopped after/);
    expect(value.content.length).toBeLessThan(100_000);
  }, 60_000);

  it("the diff of an 8,000-line rewrite is summarised, not computed", async () => {
    r = await rig(undefined, ({ ws }) => {
      writeFileSync(join(ws, "big.txt"), Array.from({ length: 8000 }, (_, i) => `old line ${i}`).join("\n"));
    });
    const rr = r;
    const content = Array.from({ length: 8000 }, (_, i) => `new line ${i * 7}`).join("\n");
    const { value } = await noStall(400, () => rr.call("write_file", { path: "big.txt", content }));
    expect(value.decision).toBe(ToolDecision.STAGED);
    const [p] = rr.broker.listProposals("s1", false);
    expect(p!.preview).toMatch(/^\[diff of big\.txt not shown/);
  });
});

describe("commands cannot outlive their limits", () => {
  it("unsandboxed: the time limit holds when the command leaves a background child, even one that left the group", async () => {
    r = await rig({
      sandbox: { mode: "none", allow_unsandboxed: true, timeout_ms: 800 },
      policy: { rules: [{ tool: "run_command", effect: "allow" }] },
    });
    const t0 = performance.now();
    const bg = await r.call("run_command", { command: "sleep 30 & echo started" });
    expect(bg.content).toMatch(/started/);
    expect(performance.now() - t0).toBeLessThan(3000);
    const setsid = toolPath("setsid");
    if (setsid) {
      const t1 = performance.now();
      const res = await r.call("run_command", { command: `${setsid} sleep 30 & sleep 30` });
      expect(res.content).toMatch(/killed: the time limit/);
      expect(performance.now() - t1).toBeLessThan(3000);
    }
  });

  describe.skipIf(!requires("sandbox resource limits", ["bwrap"]))("in bwrap", () => {
    it("file size, memory and open-file limits are set before the command runs", async () => {
      r = await rig({
        sandbox: {
          limits: {
            max_processes: 64,
            max_memory_bytes: 256 * 1024 * 1024,
            max_file_bytes: 16 * 1024 * 1024,
            max_open_files: 64,
          },
        },
        policy: { rules: [{ tool: "run_command", effect: "allow" }] },
      });
      const lim = await r.call("run_command", { command: "ulimit -n; ulimit -f; ulimit -d" });
      expect(lim.content.split("\n").slice(0, 3)).toEqual(["64", String(32768), String(262144)]);
      const big = await r.call("run_command", {
        command: "dd if=/dev/zero of=/tmp/big bs=1M count=64 2>&1; ls -l /tmp/big",
      });
      expect(big.content).toMatch(/File size limit exceeded|exit code 153|16777216/);
      expect(big.content).not.toMatch(/67108864/);
    });
  });
});

describe("secrets stay hidden from commands", () => {
  describe.skipIf(!requires("secret masking in bwrap", ["bwrap"]))("in bwrap", () => {
    it("under node_modules/ and .git/, in any case, and the scan fails closed past its limit", async () => {
      r = await rig({ policy: { rules: [{ tool: "run_command", effect: "allow" }] } }, ({ ws }) => {
        mkdirSync(join(ws, "node_modules", "pkg"), { recursive: true });
        writeFileSync(join(ws, "node_modules", "pkg", ".env"), "NM_SECRET=1\n");
        mkdirSync(join(ws, ".git"));
        writeFileSync(join(ws, ".git", "config"), "[remote]\n url = https://token-abc@host/x\n");
        writeFileSync(join(ws, "KEY.PEM"), "PEM_SECRET\n");
        writeFileSync(join(ws, "credentials.json"), "CRED_SECRET\n");
        writeFileSync(join(ws, ".envrc"), "ENVRC_SECRET\n");
      });
      const res = await r.call("run_command", {
        command: "cat node_modules/pkg/.env .git/config KEY.PEM credentials.json .envrc; echo done",
      });
      expect(res.content).toMatch(/done/);
      expect(res.content).not.toMatch(/NM_SECRET|token-abc|PEM_SECRET|CRED_SECRET|ENVRC_SECRET/);
      for (const p of ["KEY.PEM", ".git/config", "credentials.json", ".envrc", "node_modules/pkg/.env"]) {
        expect((await r.call("read_file", { path: p })).rule).toBe("path:secret");
      }
      // Past the scan limit the command is refused with a message, never run with secrets showing.
      const found = r.broker.guard.secretsInside();
      expect(found.length).toBeGreaterThanOrEqual(5);
      expect(() => r!.broker.guard.secretsInside(3)).toThrow(/too many to find every secret/);
      expect(readdirSync(r.ws).length).toBeGreaterThan(0);
    });
  });
});
