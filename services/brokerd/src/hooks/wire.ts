import type { BrokerService, ImplOf } from "@boxmaker/common";
import { Refused } from "../errors.js";
import type { Hooks } from "./hooks.js";
import type { ProjectHooks } from "./project-file.js";
import { HOOK_EVENTS, type HookEvent, type HooksConfig } from "./types.js";

type HookRpcs = Pick<ImplOf<typeof BrokerService>, "runHooks" | "listHooks" | "trustHooks">;

/** The events loopd reports; pre_tool and post_tool happen inside brokerd's own call pipeline. */
const LOOPD_EVENTS: readonly HookEvent[] = ["session_start", "turn_end", "notification"];

const projectFile = (p: ProjectHooks) => ({
  root: p.root,
  file: p.file,
  state: p.state,
  sha256: p.sha256,
  text: p.text,
  error: p.error,
});

const configured = (hooks: HooksConfig, origin: string, active: boolean) =>
  HOOK_EVENTS.flatMap((event) =>
    (hooks[event] ?? []).map((h, i) => ({
      event,
      name: h.name ?? `${event}[${i}]`,
      command: h.command,
      match: h.match ?? [],
      unsandboxed: h.unsandboxed ?? false,
      timeoutMs: h.timeout_ms,
      origin,
      active,
    })),
  );

/** The hook RPCs' wire mapping. */
export function hookRpcs(hooks: Hooks): HookRpcs {
  return {
    runHooks: async (req, ctx) => {
      const event = req.event as HookEvent;
      if (!LOOPD_EVENTS.includes(event))
        throw new Refused("hooks:event", `RunHooks takes ${LOOPD_EVENTS.join(", ")}, not "${req.event}"`);
      const fired = await hooks.fire(
        event,
        req.notificationKind,
        {
          event,
          session_id: req.sessionId,
          ...(event === "notification" ? { notification: { kind: req.notificationKind, message: req.message } } : {}),
          ...(event === "turn_end" ? { stop_reason: req.stopReason } : {}),
        },
        ctx.signal,
      );
      return {
        runs: fired.map((f) => ({
          name: f.name,
          origin: f.origin,
          exitCode: f.run.exitCode ?? -1,
          timedOut: f.run.timedOut,
          output: f.run.output,
          error: f.run.error ?? "",
          durationMs: f.run.durationMs,
        })),
      };
    },
    listHooks: () => {
      const files = hooks.projectFiles().filter((p) => p.state !== "absent");
      return {
        hooks: [
          ...configured(hooks.operator, "operator", true),
          ...files.flatMap((p) => configured(p.hooks, p.file, p.state === "trusted")),
        ],
        projectFiles: files.map(projectFile),
      };
    },
    trustHooks: (req) => ({ file: projectFile(hooks.trust(req.file, req.sha256)) }),
  };
}
