import { spawn } from "node:child_process";

export interface GroupRunOptions {
  command: string;
  args: readonly string[];
  env: Readonly<Record<string, string>>;
  cwd: string;
  /** Written to the process's stdin, which is then closed; absent: stdin is not connected. */
  stdin?: string;
  /** Bytes of output kept, stdout and stderr together; the rest is counted, not kept. */
  outputCapBytes: number;
  /** Past this the whole group is killed and the result says `timedOut`. */
  timeoutMs: number;
  /** Aborting kills the whole group; the run still resolves, with what it printed so far. */
  signal?: AbortSignal;
}

export interface GroupRunResult {
  exitCode: number | null;
  signal: string | null;
  /** At most outputCapBytes, stdout and stderr interleaved as they came, decoded as UTF-8. */
  output: string;
  /** Bytes printed past the cap. */
  droppedBytes: number;
  /** Whether anything was cut (droppedBytes > 0). */
  truncated: boolean;
  timedOut: boolean;
}

/**
 * A process that left the group (setsid) may keep our pipes open: after the
 * kill, wait this long for them to close, then stop reading and answer.
 */
const PIPE_GRACE_MS = 300;

/**
 * Runs one program as the leader of its own process group and answers once
 * its pipes have closed. The group goes as a whole (SIGKILL) when the leader
 * exits, when the time limit passes or when `signal` aborts, so nothing it
 * started outlives the run. Rejects only when the program cannot be started.
 */
export function runProcessGroup(opts: GroupRunOptions): Promise<GroupRunResult> {
  const { signal } = opts;
  return new Promise((resolve, reject) => {
    const child = spawn(opts.command, opts.args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: [opts.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    const chunks: Buffer[] = [];
    let kept = 0;
    let dropped = 0;
    let timedOut = false;
    const cap = opts.outputCapBytes;
    const take = (b: Buffer) => {
      const room = cap - kept;
      if (room > 0) {
        chunks.push(room >= b.length ? b : b.subarray(0, room));
        kept += Math.min(room, b.length);
      }
      dropped += Math.max(0, b.length - Math.max(room, 0));
    };
    child.stdout!.on("data", take);
    child.stderr!.on("data", take);
    if (opts.stdin !== undefined) {
      // A program that does not read its input must not fail on EPIPE.
      child.stdin!.on("error", () => {});
      child.stdin!.end(opts.stdin);
    }
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        /* already gone */
      }
    };
    let graceTimer: NodeJS.Timeout | undefined;
    let exited: { code: number | null; sig: NodeJS.Signals | null } | undefined;
    let settled = false;
    const settle = (code: number | null, sig: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      signal?.removeEventListener("abort", onAbort);
      child.stdout!.destroy();
      child.stderr!.destroy();
      resolve({
        exitCode: code,
        signal: sig,
        output: Buffer.concat(chunks).toString("utf8"),
        droppedBytes: dropped,
        truncated: dropped > 0,
        timedOut,
      });
    };
    const killAndWait = () => {
      kill();
      clearTimeout(graceTimer);
      graceTimer = setTimeout(
        () => settle(exited?.code ?? null, exited?.sig ?? (timedOut ? "SIGKILL" : null)),
        PIPE_GRACE_MS,
      );
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killAndWait();
    }, opts.timeoutMs);
    const onAbort = () => killAndWait();
    signal?.addEventListener("abort", onAbort, { once: true });
    child.once("error", (err) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      reject(err);
    });
    // The leader ended: whatever it left running in its group goes with it.
    child.once("exit", (code, sig) => {
      exited = { code, sig };
      killAndWait();
    });
    child.once("close", (code, sig) => settle(code, sig));
  });
}
