import type { AuditRecord } from "../audit.js";
import type { HookRun } from "./runner.js";
import type { SelectedHook } from "./select.js";
import type { HookInput } from "./types.js";

/** One line per hook run, beside the tool calls: a hook is a command brokerd ran, so it is audited like one. */
export function hookRecord(h: SelectedHook, input: HookInput, run: HookRun, denied: boolean): AuditRecord {
  return {
    kind: "hook",
    session: input.session_id,
    ...(input.call_id ? { call_id: input.call_id } : {}),
    tool: input.tool ?? "",
    decision: denied ? "denied" : run.error || run.exitCode === null ? (run.timedOut ? "timed-out" : "failed") : "ok",
    rule: `hook:${input.event}:${h.name}`,
    duration_ms: Math.round(run.durationMs * 1000) / 1000,
    result_bytes: Buffer.byteLength(run.output),
    is_error: Boolean(run.error) || run.timedOut || (run.exitCode !== 0 && !denied),
    hook: {
      event: input.event,
      name: h.name,
      origin: h.origin.kind === "operator" ? "operator" : h.origin.file,
      sandboxed: !h.spec.unsandboxed,
      exit_code: run.exitCode,
      dropped_bytes: run.droppedBytes,
    },
  };
}
