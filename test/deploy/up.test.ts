import { once } from "node:events";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli, waitFor } from "../support/stack.js";
import { alive } from "../support/processes.js";
import { Up, stopUp } from "../support/up-process.js";
import { tempDir } from "../support/tmp.js";

describe("boxmaker up --llama-sim", () => {
  let tmp: ReturnType<typeof tempDir>;
  const ups: Up[] = [];
  const start = (args: string[]) => {
    const u = new Up(args, tmp.dir);
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

  it("says a daemon's own config error when it exits 2, not only its status", async () => {
    const run = join(tmp.dir, "run");
    const overrides = join(tmp.dir, "overrides.json");
    writeFileSync(overrides, JSON.stringify({ loopd: { budgetz: 1 } }));
    const up = start([
      "--llama-sim",
      "--sandbox",
      "none",
      "--runtime-dir",
      run,
      "--state-dir",
      join(tmp.dir, "state"),
      "--workspace",
      ws,
      "--overrides",
      overrides,
    ]);
    const [code] = (await once(up.proc, "exit")) as [number | null];
    expect(code).toBe(1);
    const said = `${join(run, "loopd.json")}: key "budgetz" is not a known setting`;
    expect(up.stderr).toContain(`boxmaker up: loopd exited with status 2: ${said}; a restart cannot fix`);
    // The error `up` ends with says it too.
    expect(up.stderr.trimEnd().split("\n").at(-1)).toContain(
      `loopd: exited with status 2 before it was ready: ${said}`,
    );
  }, 60_000);

  it("rejects flags that do not fit together as a usage error", async () => {
    const r = await runCli(["up", "--llama-sim", "--upstream-socket", "/x.sock"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("choose one of --llama-sim, --upstream-socket");
    const none = await runCli(["up"]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("say which model server to use");
  });
});
