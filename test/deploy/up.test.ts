import { once } from "node:events";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli, waitFor } from "../support/stack.js";
import { alive, processesMentioning } from "../support/processes.js";
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
});
