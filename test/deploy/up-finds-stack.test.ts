// A new shell, with none of `boxmaker up`'s output at hand, reaches the stack
// `up` started: up records it in the user's runtime dir and the CLI looks
// there after --socket, BOXMAKER_SOCKET and ~/.config/boxmaker/cli.json.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliArgv } from "../support/stack.js";
import { Up, stopUp } from "../support/up-process.js";
import { tempDir } from "../support/tmp.js";

/** The CLI in a fresh login shell: nothing but PATH, HOME and the runtime dir the session gives. */
async function shell(args: string[], env: Record<string, string>) {
  const proc = spawn(process.execPath, cliArgv(args), {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
  proc.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  const [code] = (await once(proc, "exit")) as [number | null];
  return { code, stdout, stderr };
}

const oneLine = (s: string) => s.trim().split("\n");

describe("a shell without BOXMAKER_SOCKET finds the stack `boxmaker up` started", () => {
  let tmp: ReturnType<typeof tempDir>;
  let up: Up;
  let env: Record<string, string>;
  let home: string;
  let run: string;
  let loopd: string;
  let record: string;
  const writeConfig = (json: unknown) => {
    mkdirSync(join(home, ".config", "boxmaker"), { recursive: true });
    writeFileSync(join(home, ".config", "boxmaker", "cli.json"), JSON.stringify(json));
  };

  beforeAll(async () => {
    tmp = tempDir("bx-find-");
    home = join(tmp.dir, "home");
    const xdg = join(tmp.dir, "xdg");
    mkdirSync(home);
    mkdirSync(xdg, { mode: 0o700 });
    const ws = join(tmp.dir, "ws");
    mkdirSync(ws);
    // A --runtime-dir of its own: the record is what leads there, not a guess at up's default.
    run = join(tmp.dir, "run");
    loopd = join(run, "loopd.sock");
    record = join(xdg, "boxmaker", "stack.json");
    env = { HOME: home, XDG_RUNTIME_DIR: xdg };
    const upEnv = { ...process.env, ...env };
    delete upEnv.BOXMAKER_SOCKET;
    up = new Up(
      [
        "--llama-sim",
        "--sandbox",
        "none",
        "--runtime-dir",
        run,
        "--state-dir",
        join(tmp.dir, "state"),
        "--workspace",
        ws,
      ],
      tmp.dir,
      upEnv,
    );
    await up.ready();
  }, 60_000);
  afterAll(async () => {
    if (up) await stopUp(up);
    tmp.cleanup();
  });

  it("reaches it with status and ls, and status says it came from boxmaker up", async () => {
    const st = await shell(["status"], env);
    expect(st.stderr).toBe("");
    expect(st.code).toBe(0);
    expect(oneLine(st.stdout)[0]).toBe(`stack: ${loopd} (from boxmaker up, pid ${up.proc.pid})`);
    const ls = await shell(["ls"], env);
    expect(ls.code).toBe(0);
    const js = await shell(["status", "--json"], env);
    expect(js.code).toBe(0);
    const doc = JSON.parse(js.stdout) as { stack: Record<string, unknown>; daemons: unknown[] };
    expect(doc.stack).toEqual({
      socket: loopd,
      from: `from boxmaker up, pid ${up.proc.pid}`,
      source: "up",
      up_pid: up.proc.pid,
      runtime_dir: run,
      state_dir: join(tmp.dir, "state"),
      // What `up` keeps of the processes' logs, and at what limit (docs/operations.md, "Disk upkeep").
      logs: expect.objectContaining({
        dir: join(tmp.dir, "state", "logs"),
        max_bytes: 16 * 1024 * 1024,
        keep_files: 4,
      }),
    });
    expect(doc.daemons.length).toBeGreaterThan(0);
  }, 30_000);

  it("takes --socket, then BOXMAKER_SOCKET, then cli.json, then the recorded stack", async () => {
    const bogus = join(tmp.dir, "bogus.sock");
    const stackLine = async (args: string[], extra: Record<string, string>) => {
      const r = await shell([...args, "status"], { ...env, ...extra });
      expect(r.stderr).toBe("");
      return oneLine(r.stdout)[0];
    };
    try {
      writeConfig({ socket: bogus });
      expect(await stackLine(["--socket", loopd], { BOXMAKER_SOCKET: bogus })).toBe(`stack: ${loopd} (from --socket)`);
      expect(await stackLine([], { BOXMAKER_SOCKET: loopd })).toBe(`stack: ${loopd} (from BOXMAKER_SOCKET)`);
      writeConfig({ socket: loopd });
      expect(await stackLine([], {})).toBe(`stack: ${loopd} (from ~/.config/boxmaker/cli.json)`);
      // XDG_CONFIG_HOME moves the file, and a relative home is not what is named.
      const cfg = join(tmp.dir, "cfg");
      mkdirSync(join(cfg, "boxmaker"), { recursive: true });
      writeFileSync(join(cfg, "boxmaker", "cli.json"), JSON.stringify({ socket: loopd }));
      expect(await stackLine([], { XDG_CONFIG_HOME: cfg })).toBe(
        `stack: ${loopd} (from ${join(cfg, "boxmaker", "cli.json")})`,
      );
    } finally {
      writeConfig({});
    }
    expect(await stackLine([], {})).toBe(`stack: ${loopd} (from boxmaker up, pid ${up.proc.pid})`);
  }, 60_000);

  it("runs a new session in cli.json's mode when --mode is not given", async () => {
    try {
      writeConfig({ mode: "read-only" });
      const r = await shell(["run", "hello"], env);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain("· mode read-only");
      const flag = await shell(["run", "--mode", "auto-edit", "hello"], env);
      expect(flag.stderr).toContain("· mode auto-edit");
    } finally {
      writeConfig({});
    }
  }, 60_000);

  it("says one line naming the file and the key for a bad cli.json", async () => {
    const cases: Array<[string, string]> = [
      ['{"sockets": "/x"}', 'unknown key "sockets"'],
      ['{"socket": 5}', '"socket" must be the absolute path of loopd\'s socket, not 5'],
      ['{"socket": "loopd.sock"}', '"socket" must be the absolute path'],
      ['{"mode": "yolo"}', '"mode" must be one of read-only, ask, auto-edit, auto, not "yolo"'],
      ["{socket: 1}", "not JSON"],
      ["[]", "must be a JSON object"],
    ];
    try {
      for (const [text, says] of cases) {
        mkdirSync(join(home, ".config", "boxmaker"), { recursive: true });
        writeFileSync(join(home, ".config", "boxmaker", "cli.json"), text);
        const r = await shell(["ls"], env);
        expect(r.code, text).toBe(2);
        expect(r.stdout).toBe("");
        expect(oneLine(r.stderr), text).toHaveLength(1);
        expect(r.stderr, text).toContain(`boxmaker: ~/.config/boxmaker/cli.json: ${says}`);
      }
    } finally {
      writeConfig({});
    }
  }, 60_000);

  it("names the running stack when another socket was asked for, and suggests no `boxmaker up`", async () => {
    const missing = join(tmp.dir, "nope.sock");
    const r = await shell(["ls"], { ...env, BOXMAKER_SOCKET: missing });
    expect(r.code).toBe(6);
    expect(oneLine(r.stderr)).toEqual([
      `boxmaker: cannot reach loopd at ${missing} (from BOXMAKER_SOCKET): no such socket; the stack \`boxmaker up\` started (pid ${up.proc.pid}) is at ${loopd}: unset BOXMAKER_SOCKET to use it`,
    ]);
    const flag = await shell(["--socket", missing, "ls"], env);
    expect(flag.stderr).toContain(`is at ${loopd}: pass that to --socket, or leave --socket out`);
    expect(flag.stderr).not.toContain("start one with");
  }, 30_000);

  it("keeps the record to its owner: a record dir others may enter is not trusted", async () => {
    const dir = join(record, "..");
    chmodSync(dir, 0o755);
    try {
      const r = await shell(["ls"], env);
      expect(r.code).toBe(6);
      expect(r.stderr).toContain("(system default)");
    } finally {
      chmodSync(dir, 0o700);
    }
  }, 30_000);

  // Last: it stops the stack.
  it("removes the record on a clean stop, and ignores a stale one", async () => {
    expect(JSON.parse(readFileSync(record, "utf8"))).toMatchObject({ loopdSocket: loopd, pid: up.proc.pid });
    await stopUp(up);
    expect(existsSync(record)).toBe(false);
    const after = await shell(["ls"], env);
    expect(after.code).toBe(6);
    expect(oneLine(after.stderr)).toEqual([
      "boxmaker: cannot reach loopd at /run/boxmaker/loopd.sock (system default): no such socket; no stack is running: start one with `boxmaker up` or `systemctl start boxmaker-loopd`",
    ]);
    // Left by an `up` that was killed (its pid gone), and one whose pid lives on but whose socket refuses.
    const dead = spawn("true");
    await once(dead, "exit");
    for (const pid of [dead.pid!, process.pid]) {
      writeFileSync(record, JSON.stringify({ loopdSocket: loopd, runtimeDir: run, stateDir: tmp.dir, pid }));
      const r = await shell(["status"], env);
      expect(r.code, `pid ${pid}`).toBe(6);
      expect(r.stderr, `pid ${pid}`).toContain("(system default): no such socket; no stack is running");
    }
  }, 60_000);
});
