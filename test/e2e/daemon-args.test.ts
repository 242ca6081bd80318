import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { daemonMain, waitFor } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";

/**
 * A daemon's command line. Each run has a config named by the daemon's
 * environment variable that puts its socket and state under `stack/`: a
 * daemon that ignored a mistyped flag or `--help` would start on that config
 * and create `stack/` (and on a real machine, without the variable, start on
 * /run/boxmaker and /var/lib/boxmaker). It must exit before touching disk.
 */

type Name = "inferproxy" | "brokerd" | "loopd";
const NAMES: Name[] = ["inferproxy", "brokerd", "loopd"];

function configFor(name: Name, stack: string, ws: string): object {
  switch (name) {
    case "inferproxy":
      return { socket: join(stack, "inferproxy.sock"), upstream: { socket_path: join(stack, "llama.sock") } };
    case "brokerd":
      return {
        socket: join(stack, "brokerd.sock"),
        state_dir: join(stack, "broker"),
        workspace_roots: [ws],
        sandbox: { mode: "none", allow_unsandboxed: true },
      };
    case "loopd":
      return {
        socket: join(stack, "loopd.sock"),
        state_dir: join(stack, "loopd"),
        inferproxy_socket: join(stack, "inferproxy.sock"),
        brokerd_socket: join(stack, "brokerd.sock"),
      };
  }
}

describe("a daemon's command line", () => {
  let tmp: ReturnType<typeof tempDir>;
  let stack: string;
  let ws: string;
  beforeEach(() => {
    tmp = tempDir("bx-args-");
    stack = join(tmp.dir, "stack");
    ws = join(tmp.dir, "ws");
    mkdirSync(ws);
  });
  afterEach(() => tmp.cleanup());

  /** Runs the daemon; one that does not exit on its own within 15 s is killed (and fails the test). */
  async function run(name: Name, args: string[]) {
    const configPath = join(tmp.dir, `${name}.json`);
    writeFileSync(configPath, JSON.stringify(configFor(name, stack, ws)));
    const proc = spawn(process.execPath, [daemonMain(name), ...args], {
      cwd: tmp.dir,
      env: { ...process.env, NOTIFY_SOCKET: "", [`BOXMAKER_${name.toUpperCase()}_CONFIG`]: configPath },
    });
    let stdout = "";
    let stderr = "";
    proc.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    proc.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const kill = setTimeout(() => proc.kill("SIGKILL"), 15_000);
    const [code] = (await once(proc, "exit")) as [number | null];
    clearTimeout(kill);
    return { code, stdout, stderr };
  }

  it.each(NAMES)("%s refuses a mistyped flag with exit 2 and one line, creating nothing", async (name) => {
    for (const args of [["--confg", "x.json"], ["--config", join(tmp.dir, `${name}.json`), "extra"], ["-c"]]) {
      const r = await run(name, args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(
          `^${name}: .+ \\(valid: --config FILE, --check-config FILE, --version, --help\\); see ${name} --help\\n$`,
        ),
      );
      expect(r.stdout).toBe("");
      expect(existsSync(stack), `${name} ${args.join(" ")} created ${stack}`).toBe(false);
    }
    const typo = await run(name, ["--confg", "x.json"]);
    expect(typo.stderr).toContain("unknown option --confg");
  });

  it.each(NAMES)("%s --help prints its usage and exits 0, creating nothing", async (name) => {
    for (const args of [["--help"], ["-h"]]) {
      const r = await run(name, args);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe("");
      expect(r.stdout).toMatch(new RegExp(`^usage: ${name} \\[--config FILE\\]\\n`));
      for (const word of [
        "--config FILE",
        "--check-config FILE",
        `$BOXMAKER_${name.toUpperCase()}_CONFIG`,
        "--version",
        "--help",
      ])
        expect(r.stdout).toContain(word);
      expect(existsSync(stack)).toBe(false);
    }
  });

  it.each(NAMES)("%s --check-config checks the file as a start would, creating nothing", async (name) => {
    const good = join(tmp.dir, `${name}.json`);
    writeFileSync(good, JSON.stringify(configFor(name, stack, ws)));
    const ok = await run(name, ["--check-config", good]);
    expect(ok, ok.stderr).toMatchObject({ code: 0, stdout: `${good}: ok\n`, stderr: "" });
    const bad = join(tmp.dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ ...configFor(name, stack, ws), log_levle: "debug" }));
    const no = await run(name, ["--check-config", bad]);
    expect(no).toMatchObject({ code: 2, stdout: "", stderr: `${bad}: key "log_levle" is not a known setting\n` });
    // The same line a start on that file exits with.
    const start = await run(name, ["--config", bad]);
    expect(start).toMatchObject({ code: 2, stderr: no.stderr });
    const missing = await run(name, ["--check-config", join(tmp.dir, "nope.json")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("nope.json: cannot read");
    const both = await run(name, ["--check-config", good, "--config", good]);
    expect(both.code).toBe(2);
    expect(both.stderr).toBe(`${name}: --check-config names the file to check; leave --config out\n`);
    expect(existsSync(stack), `${name} --check-config created ${stack}`).toBe(false);
  });

  it("a daemon still starts on the config its environment variable names", async () => {
    // The other side of the tests above: without a bad argument this very config is used.
    const configPath = join(tmp.dir, "brokerd.json");
    writeFileSync(configPath, JSON.stringify(configFor("brokerd", stack, ws)));
    const proc = spawn(process.execPath, [daemonMain("brokerd")], {
      cwd: tmp.dir,
      env: { ...process.env, NOTIFY_SOCKET: "", BOXMAKER_BROKERD_CONFIG: configPath },
      stdio: "ignore",
    });
    try {
      const sock = join(stack, "brokerd.sock");
      await waitFor(() => existsSync(sock) || proc.exitCode !== null, 20_000, "brokerd socket");
      expect(existsSync(sock)).toBe(true);
    } finally {
      const exited = proc.exitCode === null ? once(proc, "exit") : undefined;
      proc.kill("SIGTERM");
      await exited;
    }
  });
});
