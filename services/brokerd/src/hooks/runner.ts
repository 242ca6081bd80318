import { messageOf } from "@boxmaker/common";
import { runProcessGroup } from "../process-group.js";
import { CLEAN_ENV } from "../clean-env.js";
import type { Sandbox } from "../sandbox.js";
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
async function runUnsandboxed(spec: HookSpec, input: HookInput, json: string, signal?: AbortSignal): Promise<Ran> {
  const r = await runProcessGroup({
    command: "/bin/sh",
    args: ["-c", spec.command],
    env: { ...CLEAN_ENV, BOXMAKER_HOOK_EVENT: input.event },
    cwd: input.cwd,
    stdin: json,
    outputCapBytes: spec.output_cap_bytes,
    timeoutMs: spec.timeout_ms,
    signal,
  });
  return { exitCode: r.exitCode, timedOut: r.timedOut, ...cut(r.output, r.droppedBytes, spec.output_cap_bytes) };
}
