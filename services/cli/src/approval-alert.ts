import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import type { Proposal } from "@boxmaker/common/client";
import { ringBell, visible } from "./render/terminal-safe.js";

/**
 * How a person away from the terminal learns that a turn waits for them:
 * the terminal's bell, and a desktop notification where there is a desktop.
 * `BOXMAKER_NOTIFY` picks: unset or `bell,desktop` both, `bell` or `desktop`
 * one, `off` (or empty) neither. Everything else that needs a person (a
 * budget, a failed schedule) is the notification hook's, on the daemon side.
 */
interface AlertChannels {
  bell: boolean;
  desktop: boolean;
}

function alertChannels(env: NodeJS.ProcessEnv): AlertChannels {
  const v = env.BOXMAKER_NOTIFY;
  if (v === undefined) return { bell: true, desktop: true };
  const words = v.toLowerCase().split(/[\s,]+/);
  return { bell: words.includes("bell"), desktop: words.includes("desktop") };
}

function onPath(cmd: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, cmd), constants.X_OK);
      return join(dir, cmd);
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/** notify-send, when it is installed and there is a session bus or a display to show it on. */
function desktopNotifier(env: NodeJS.ProcessEnv): string | undefined {
  if (!env.DISPLAY && !env.WAYLAND_DISPLAY && !env.DBUS_SESSION_BUS_ADDRESS) return undefined;
  return onPath("notify-send", env);
}

/** The alert for one proposal a turn waits on; never throws and never waits. */
export function approvalAlert(
  stream: NodeJS.WritableStream,
  env: NodeJS.ProcessEnv = process.env,
): (p: Pick<Proposal, "id" | "tool" | "sessionId">) => void {
  const on = alertChannels(env);
  const notifier = on.desktop ? desktopNotifier(env) : undefined;
  return (p) => {
    if (on.bell) ringBell(stream);
    if (!notifier) return;
    // Arguments, never a shell line; the names are cut and made visible like everything else shown.
    const body = visible(`${p.tool} · proposal ${p.id} · session ${p.sessionId}`).slice(0, 200);
    try {
      const child = spawn(notifier, ["--app-name=boxmaker", "--", "boxmaker: approval waiting", body], {
        stdio: "ignore",
        detached: true,
        env,
      });
      child.on("error", () => {});
      child.unref();
    } catch {
      /* a notification that cannot be shown is no reason to stop */
    }
  };
}
