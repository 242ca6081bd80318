import { spawn } from "node:child_process";
import { messageOf } from "@boxmaker/common";
import { CLEAN_ENV, type Sandbox } from "../sandbox.js";
import type { HookInput, HookSpec } from "./types.js";

export interface HookRun {
  exitCode: number | null;
  timedOut: boolean;
  /** At most the hook's output_cap_bytes, stdout and stderr interleaved as they came. */
  output: string;
  droppedBytes: number;
  /** The hook could not be started (no sandbox, spawn failed); it did not run. */
  error?: string;
  durationMs: number;
}

const quote = (w: string) => `'${w.replaceAll("'", `'\\''`)}'`;

/**
 * Runs one hook with its input on stdin, its time limit and output cap.
 * Never throws: a hook that cannot start is a run with `error`, so a broken
 * hook is an audit line, not a broken turn.
 */
export async function runHook(
  sandbox: Sandbox,
  spec: HookSpec,
  input: HookInput,
  signal?: AbortSignal,
): Promise<HookRun> {
  const t0 = performance.now();
  const json = JSON.stringify(input);
  try {
    const r = spec.unsandboxed
      ? await runUnsandboxed(spec, input, json, signal)
      : await runSandboxed(sandbox, spec, input, json, signal);
    return { ...r, durationMs: performance.now() - t0 };
  } catch (err) {
    return {
      exitCode: null,
      timedOut: false,
      output: "",
      droppedBytes: 0,
      error: messageOf(err),
      durationMs: performance.now() - t0,
    };
  }
}

type Ran = Omit<HookRun, "durationMs">;

function cut(text: string, dropped: number, cap: number): { output: string; droppedBytes: number } {
  const b = Buffer.from(text, "utf8");
  if (b.length <= cap) return { output: text, droppedBytes: dropped };
  // Cut on a character boundary: a split UTF-8 sequence would reach the model as U+FFFD.
  let end = cap;
  while (end > 0 && (b[end]! & 0xc0) === 0x80) end--;
  return { output: b.subarray(0, end).toString("utf8"), droppedBytes: dropped + b.length - end };
}

/**
 * In bwrap like run_command, through the one sandbox runner. Its stdin is
 * closed there, so the input goes in as a quoted word piped to the hook's own
 * shell: the hook reads it on stdin all the same.
 */
async function runSandboxed(
  sandbox: Sandbox,
  spec: HookSpec,
  input: HookInput,
  json: string,
  signal?: AbortSignal,
): Promise<Ran> {
  const command = `printf '%s' ${quote(json)} | BOXMAKER_HOOK_EVENT=${input.event} /bin/sh -c ${quote(spec.command)}`;
  const r = await sandbox.run({ command, cwd: input.cwd, timeoutMs: spec.timeout_ms }, signal);
  return { exitCode: r.exitCode, timedOut: r.timedOut, ...cut(r.output, r.droppedBytes, spec.output_cap_bytes) };
}

/** As brokerd's user, in its own process group, which goes as a whole when the shell exits or the limit passes. */
function runUnsandboxed(spec: HookSpec, input: HookInput, json: string, signal?: AbortSignal): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", ["-c", spec.command], {
      cwd: input.cwd,
      env: { ...CLEAN_ENV, BOXMAKER_HOOK_EVENT: input.event },
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const chunks: Buffer[] = [];
    let kept = 0;
    let dropped = 0;
    let timedOut = false;
    const cap = spec.output_cap_bytes;
    const take = (b: Buffer) => {
      const room = cap - kept;
      if (room > 0) {
        chunks.push(b.subarray(0, room));
        kept += Math.min(room, b.length);
      }
      dropped += Math.max(0, b.length - Math.max(room, 0));
    };
    child.stdout!.on("data", take);
    child.stderr!.on("data", take);
    // A hook that does not read its input must not fail on EPIPE.
    child.stdin!.on("error", () => {});
    child.stdin!.end(json);
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        /* already gone */
      }
    };
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
    let exitCode: number | null = null;
    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(grace);
      signal?.removeEventListener("abort", stop);
      child.stdout!.destroy();
      child.stderr!.destroy();
      resolve({ exitCode, timedOut, ...cut(Buffer.concat(chunks).toString("utf8"), dropped, cap) });
    };
    // A child that left the group (setsid) may hold the pipes: after the kill, stop waiting for them.
    const stop = () => {
      kill();
      clearTimeout(grace);
      grace = setTimeout(settle, 300);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, spec.timeout_ms);
    signal?.addEventListener("abort", stop, { once: true });
    child.once("error", (err) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", stop);
      reject(err);
    });
    child.once("exit", (code) => {
      exitCode = code;
      stop();
    });
    child.once("close", settle);
  });
}
