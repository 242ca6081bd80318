import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type GroupRunOptions, runProcessGroup } from "../src/process-group.js";

const env = { PATH: "/usr/local/bin:/usr/bin:/bin" };
const sh = (script: string, more: Partial<GroupRunOptions> = {}) =>
  runProcessGroup({
    command: "/bin/sh",
    args: ["-c", script],
    env,
    cwd: tmpdir(),
    outputCapBytes: 1024 * 1024,
    timeoutMs: 60_000,
    ...more,
  });

/** Whether a pid names a process that has not died (a zombie has: it only waits to be reaped). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/**
 * Whether the process dies soon. A killed process closes its files (the pipes
 * the run waits for) before the kernel marks it dead, so a loaded machine can
 * show it still exiting just after the run answered; one not killed is still
 * running at the end of the bound.
 */
async function dies(pid: number): Promise<boolean> {
  for (const end = Date.now() + 10_000; Date.now() < end; ) {
    if (!running(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return !running(pid);
}

const leftRunning: number[] = [];
afterEach(() => {
  for (const pid of leftRunning.splice(0))
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* already gone */
    }
});

describe("runProcessGroup", () => {
  it("kills the whole group at the time limit, a grandchild that ignores SIGTERM included", async () => {
    // The grandchild keeps the output pipe: the run can only answer once it is gone (or after the grace).
    const r = await sh(`trap "" TERM; (trap "" TERM; exec sleep 1000) & echo $!; wait`, { timeoutMs: 1000 });
    const grandchild = Number(r.output.trim());
    leftRunning.push(grandchild);
    expect(grandchild).toBeGreaterThan(1);
    expect(r.timedOut).toBe(true);
    expect(r.signal).toBe("SIGKILL");
    expect(r.exitCode).toBeNull();
    expect(await dies(grandchild)).toBe(true);
  });

  it("kills what the leader left in its group when the leader exits", async () => {
    const r = await sh(`(exec sleep 1000) & echo $!; exit 3`);
    const child = Number(r.output.trim());
    leftRunning.push(child);
    expect(r).toMatchObject({ exitCode: 3, signal: null, timedOut: false });
    expect(await dies(child)).toBe(true);
  });

  it("keeps output up to the cap, stdout and stderr together, and counts and flags the rest", async () => {
    const r = await sh("printf '%0600d' 0; printf '%0600d' 0 >&2", { outputCapBytes: 1000 });
    expect(r.output).toBe("0".repeat(1000));
    expect(r.droppedBytes).toBe(200);
    expect(r.truncated).toBe(true);
    expect(r.exitCode).toBe(0);
    const whole = await sh("printf '%01000d' 0", { outputCapBytes: 1000 });
    expect(whole).toMatchObject({ output: "0".repeat(1000), droppedBytes: 0, truncated: false });
  });

  it("waits for the pipes: output still buffered when the leader exits is all there", async () => {
    // Far more than a pipe holds: most of it is read after the exit.
    const r = await sh("head -c 3000000 /dev/zero | tr '\\0' x", { outputCapBytes: 4_000_000 });
    expect(r.exitCode).toBe(0);
    expect(r.output.length).toBe(3_000_000);
    expect(r.truncated).toBe(false);
  });

  it("answers when a process that left the group holds the pipes open", async () => {
    const r = await sh("setsid sh -c 'exec sleep 1000' & echo $!; echo done; exit 0");
    const [pid, said] = r.output.trim().split("\n");
    leftRunning.push(Number(pid));
    expect(said).toBe("done");
    expect(r).toMatchObject({ exitCode: 0, timedOut: false });
  });

  it("feeds stdin and closes it", async () => {
    const r = await sh("wc -c", { stdin: "twelve bytes" });
    expect(r.output.trim()).toBe("12");
  });

  it("kills the group when the signal aborts, without calling it a timeout", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pg-"));
    const pidFile = join(dir, "pid");
    const ac = new AbortController();
    const run = sh(`(trap "" TERM; exec sleep 1000) & echo $! > ${pidFile}.tmp && mv ${pidFile}.tmp ${pidFile}; wait`, {
      signal: ac.signal,
    });
    while (!existsSync(pidFile)) await new Promise((r) => setTimeout(r, 20));
    const child = Number(readFileSync(pidFile, "utf8"));
    leftRunning.push(child);
    ac.abort();
    const r = await run;
    rmSync(dir, { recursive: true });
    expect(r.timedOut).toBe(false);
    expect(r.signal).toBe("SIGKILL");
    expect(await dies(child)).toBe(true);
  });

  it("rejects when the program cannot start", async () => {
    await expect(
      runProcessGroup({
        command: "/nonexistent/prog",
        args: [],
        env,
        cwd: tmpdir(),
        outputCapBytes: 1,
        timeoutMs: 1000,
      }),
    ).rejects.toThrow(/ENOENT/);
  });
});
