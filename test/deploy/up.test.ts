import { once } from "node:events";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli, waitFor } from "../support/stack.js";
import { alive, processesMentioning } from "../support/processes.js";
import { Up, stopUp } from "../support/up-process.js";
import { tempDir } from "../support/tmp.js";
import { SimProcess } from "../support/sim-process.js";
import { requires } from "../support/requirements.js";
import { Tmux } from "../../services/cli/test/support/tmux.js";

describe("boxmaker up --llama-sim", () => {
  let tmp: ReturnType<typeof tempDir>;
  const ups: Up[] = [];
  const start = (args: string[], env?: NodeJS.ProcessEnv) => {
    const u = new Up(args, tmp.dir, env);
    ups.push(u);
    return u;
  };
  let ws: string;
  beforeEach(() => {
    tmp = tempDir("bx-up-");
    // The workspace beside the runtime and state dirs, never around them: brokerd refuses a stack inside a workspace.
    ws = join(tmp.dir, "ws");
    mkdirSync(ws);
  });
  afterEach(async () => {
    for (const u of ups.splice(0)) await stopUp(u);
    tmp.cleanup();
  });

  it("runs sessions, restarts a killed daemon, and stops everything on SIGINT", async () => {
    const run = join(tmp.dir, "run");
    const state = join(tmp.dir, "state");
    const up = start([
      "--llama-sim",
      "--sandbox",
      "none",
      "--runtime-dir",
      run,
      "--state-dir",
      state,
      "--workspace",
      ws,
    ]);
    await up.ready();

    const loopdSock = join(run, "loopd.sock");
    expect(up.stdout).toContain(`export BOXMAKER_SOCKET=${loopdSock}`);
    for (const f of ["llama-sim.log", "inferproxy.log", "brokerd.log", "loopd.log"])
      expect(existsSync(join(state, "logs", f))).toBe(true);
    const pids = ["llama-sim", "inferproxy", "brokerd", "loopd"].map((n) => up.pid(n));

    const env = { BOXMAKER_SOCKET: loopdSock };
    const first = await runCli(["run", "first task"], { env });
    expect(first.stderr).not.toContain("boxmaker:");
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('You said: "first task"');

    // A daemon dies hard: the supervisor notices, backs off, restarts it, and it serves again.
    const loopdPid = up.pid("loopd");
    process.kill(loopdPid, "SIGKILL");
    await waitFor(() => up.stderr.includes("loopd restarted and ready"), 15_000, "loopd restart");
    expect(up.stderr).toContain("loopd killed by SIGKILL; restarting in");
    const newPid = Number(/loopd restarted and ready \(pid (\d+)\)/.exec(up.stderr)![1]);
    expect(newPid).not.toBe(loopdPid);
    expect(alive(newPid)).toBe(true);

    const second = await runCli(["run", "second task"], { env });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('You said: "second task"');
    // Both sessions are in the one state dir: the restarted loopd kept the first.
    expect(readdirSync(join(state, "loopd", "sessions")).filter((f) => f.endsWith(".jsonl"))).toHaveLength(2);

    up.proc.kill("SIGINT");
    const [code] = (await once(up.proc, "exit")) as [number | null];
    expect(code).toBe(0);
    for (const pid of [...pids, newPid]) expect(alive(pid), `pid ${pid} still running`).toBe(false);
    expect(readdirSync(run).filter((f) => f.endsWith(".sock"))).toEqual([]);
  }, 60_000);

  it("gives the daemons none of the shell's secrets: an unsandboxed command reading its parent's environment finds none", async () => {
    const run = join(tmp.dir, "run");
    const state = join(tmp.dir, "state");
    const canaries = {
      AWS_SECRET_ACCESS_KEY: "CANARY-aws-51d0",
      GITHUB_TOKEN: "CANARY-gh-77e1",
      MY_DB_PASSWORD: "CANARY-db",
    };
    const up = start(
      ["--llama-sim", "--sandbox", "none", "--runtime-dir", run, "--state-dir", state, "--workspace", ws],
      {
        ...process.env,
        ...canaries,
        LANG: "C.UTF-8",
      },
    );
    await up.ready();
    for (const name of ["inferproxy", "brokerd", "loopd"]) {
      // What `cat /proc/$PPID/environ` in an unsandboxed command reads of brokerd (and of the others, same user).
      const environ = readFileSync(`/proc/${up.pid(name)}/environ`, "utf8").split("\0");
      expect(environ.join("\n"), name).not.toMatch(/CANARY|AWS_SECRET|GITHUB_TOKEN|MY_DB_PASSWORD/);
      expect(environ, name).toContain("LANG=C.UTF-8");
    }
    // And brokerd says in one line what `none` leaves open.
    await waitFor(
      () => readFileSync(join(state, "logs", "brokerd.log"), "utf8").includes("not sandboxed"),
      5_000,
      "warning",
    );
    const warning = readFileSync(join(state, "logs", "brokerd.log"), "utf8")
      .split("\n")
      .find((l) => l.includes("not sandboxed"))!;
    expect(warning).toContain(`/proc/${up.pid("brokerd")}/environ`);
    expect(warning).toMatch(/every file it can/);
    expect(warning).not.toContain("CANARY");
  }, 60_000);

  it("refuses a second stack on the same runtime dir and leaves the first one alone", async () => {
    const args = [
      "--llama-sim",
      "--sandbox",
      "none",
      "--runtime-dir",
      join(tmp.dir, "run"),
      "--state-dir",
      join(tmp.dir, "state"),
      "--workspace",
      ws,
    ];
    const up = start(args);
    await up.ready();
    const second = start(args);
    const [code] = (await once(second.proc, "exit")) as [number | null];
    expect(code).toBe(1);
    expect(second.stderr).toContain("is in use: another stack runs in");
    const status = await runCli(["run", "still there?"], {
      env: { BOXMAKER_SOCKET: join(tmp.dir, "run", "loopd.sock") },
    });
    expect(status.code).toBe(0);
  }, 60_000);

  it("refuses a second stack on the same state dir (another runtime dir) in the one line naming the holder", async () => {
    const state = join(tmp.dir, "state");
    const args = (run: string) => [
      "--llama-sim",
      "--sandbox",
      "none",
      "--runtime-dir",
      join(tmp.dir, run),
      "--state-dir",
      state,
      "--workspace",
      ws,
    ];
    const up = start(args("run1"));
    await up.ready();
    const second = start(args("run2"));
    const [code] = (await once(second.proc, "exit")) as [number | null];
    expect(code).toBe(1);
    // inferproxy and brokerd start together; whichever refuses first is the line.
    const m =
      /^boxmaker: (inferproxy|brokerd): (\S+) is in use by \1 pid (\d+) \(socket (\S+), since [^)]+\): .+$/m.exec(
        second.stderr,
      );
    expect(m, second.stderr).not.toBeNull();
    const [, name, dir, pid, socket] = m!;
    expect(dir).toBe(join(state, name === "inferproxy" ? "slots" : "broker"));
    expect(Number(pid)).toBe(up.pid(name!));
    expect(socket).toBe(join(tmp.dir, "run1", `${name}.sock`));
    // The line itself, not an exit status to look up in a log, and no restart of a daemon that cannot start.
    expect(second.stderr).not.toMatch(/exited with status|restarting in/);
    // Nothing of the second stack is left running, and the first still serves.
    expect(processesMentioning(join(tmp.dir, "run2"))).toEqual([]);
    const r = await runCli(["run", "still mine?"], { env: { BOXMAKER_SOCKET: join(tmp.dir, "run1", "loopd.sock") } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('You said: "still mine?"');
  }, 60_000);

  it("rejects flags that do not fit together as a usage error", async () => {
    const r = await runCli(["up", "--llama-sim", "--upstream-socket", "/x.sock"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("choose one of --llama-sim, --upstream-socket");
    const none = await runCli(["up"]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("say which model server to use");
  });

  it("shows a daemon's own line when its config is refused (an unknown key in --overrides)", async () => {
    const overrides = join(tmp.dir, "overrides.json");
    writeFileSync(overrides, JSON.stringify({ loopd: { budgetz: 1 } }));
    const run = join(tmp.dir, "run");
    const r = await runCli(
      ["up", "--llama-sim", "--sandbox", "none", "--runtime-dir", run, "--state-dir", join(tmp.dir, "state")].concat([
        "--workspace",
        ws,
        "--overrides",
        overrides,
      ]),
      { timeoutMs: 30_000 },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`boxmaker: loopd: ${join(run, "loopd.json")}: key "budgetz" is not a known setting`);
    expect(r.stderr).not.toMatch(/exited with status|restarting in/);
  }, 40_000);
});

/** `boxmaker up --upstream-socket`: a llama-server `up` did not start, here the simulator as a process of its own. */
describe("boxmaker up --upstream-socket", () => {
  let tmp: ReturnType<typeof tempDir>;
  let ws: string;
  const sims: SimProcess[] = [];
  const ups: Up[] = [];
  beforeEach(() => {
    tmp = tempDir("bx-upu-");
    ws = join(tmp.dir, "ws");
    mkdirSync(ws);
  });
  afterEach(async () => {
    for (const u of ups.splice(0)) await stopUp(u);
    for (const s of sims.splice(0)) await s.kill();
    tmp.cleanup();
  });
  const stackArgs = () => [
    "--sandbox",
    "none",
    "--runtime-dir",
    join(tmp.dir, "run"),
    "--state-dir",
    join(tmp.dir, "state"),
    "--workspace",
    ws,
  ];
  const sim = async (loadingMs: number) => {
    const s = new SimProcess(join(tmp.dir, "llama.sock"), tmp.dir);
    sims.push(s);
    return s.start([], { loadingMs });
  };

  it("names a socket path that does not exist in one line, at once; a stale socket is told apart", async () => {
    const missing = join(tmp.dir, "lama.sock");
    const t0 = Date.now();
    const r = await runCli(["up", "--upstream-socket", missing, ...stackArgs()]);
    expect(r.code).toBe(1);
    expect(Date.now() - t0).toBeLessThan(5_000);
    // The one line, and nothing else: nothing was started, so there is nothing to report stopping.
    expect(r.stderr.trim().split("\n")).toEqual([
      `boxmaker: --upstream-socket ${missing}: no such socket (is the path right, and is llama-server running?)`,
    ]);
    expect(existsSync(join(tmp.dir, "state", "logs"))).toBe(false); // nothing was started or created

    // A server that died leaves its socket file: there, but nobody listens.
    const dead = await sim(0);
    await dead.kill();
    expect(existsSync(dead.socketPath)).toBe(true);
    const stale = await runCli(["up", "--upstream-socket", dead.socketPath, ...stackArgs()]);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain(
      `llama-server at ${dead.socketPath}: nobody is listening on this socket (ECONNREFUSED)`,
    );
    expect(stale.stderr).not.toContain("no such socket");
  });

  it("waits for a server loading its model, showing progress, then takes its contract", async () => {
    const s = await sim(3_000);
    const up = new Up(
      ["--upstream-socket", s.socketPath, "--accept-server-contract", "--ready-timeout", "20", ...stackArgs()],
      tmp.dir,
    );
    ups.push(up);
    await up.ready(40_000);
    // Piped: one line when the state changed, then how long it took.
    expect(up.stderr).toMatch(
      new RegExp(`^waiting for llama-server at ${s.socketPath}: loading the model \\(503\\), \\d+ s of 20 s$`, "m"),
    );
    expect(up.stderr.match(/^waiting for /gm)).toHaveLength(1);
    expect(up.stderr).toMatch(new RegExp(`^llama-server at ${s.socketPath}: ready after \\d+ s$`, "m"));
    const r = await runCli(["run", "loaded?"], { env: { BOXMAKER_SOCKET: join(tmp.dir, "run", "loopd.sock") } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('You said: "loaded?"');
  }, 60_000);

  it("gives up on a server still loading at --ready-timeout, naming the timeout and what the server was doing", async () => {
    const s = await sim(60_000);
    const t0 = Date.now();
    const r = await runCli([
      "up",
      "--upstream-socket",
      s.socketPath,
      "--accept-server-contract",
      "--ready-timeout",
      "2",
      ...stackArgs(),
    ]);
    expect(r.code).toBe(1);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(r.stderr).toContain(
      `boxmaker: llama-server at ${s.socketPath}: not ready after 2 s (--ready-timeout 2): loading the model (503)`,
    );
  }, 30_000);

  it.skipIf(!requires("up's progress line on a terminal (pty tests)", ["tmux"]))(
    "on a terminal the progress is one line redrawn in place, and gives way to how long the load took",
    async () => {
      const s = await sim(5_000);
      const tmux = new Tmux();
      try {
        const pane = await tmux.start(
          Tmux.cliLine(
            [
              "up",
              "--upstream-socket",
              s.socketPath,
              "--accept-server-contract",
              "--ready-timeout",
              "20",
              ...stackArgs(),
            ],
            { NO_COLOR: "1" },
          ),
        );
        const waiting = await tmux.waitFor(
          pane,
          (t) => /loading the model \(503\), [2-9] s of 20 s/.test(t),
          "progress",
        );
        expect(waiting.match(/waiting for llama-server/g), waiting).toHaveLength(1);
        const ready = await tmux.waitFor(pane, (t) => t.includes("export BOXMAKER_SOCKET="), "the stack", 30_000);
        expect(ready).not.toContain("waiting for");
        expect(ready).toMatch(new RegExp(`^llama-server at ${s.socketPath}: ready after \\d+ s$`, "m"));
        await tmux.keys(pane, "C-c");
        await tmux.waitFor(pane, (t) => t.includes("[exit 0]"), "up to stop", 20_000);
      } finally {
        await tmux.kill();
      }
    },
    60_000,
  );
});
