import { PERMISSION_MODES, parseMode, type PermissionMode } from "@boxmaker/common/lite";
import { readFileSync } from "node:fs";
import { isAbsolute, join, relative } from "node:path";
import { UsageError } from "./errors.js";

/** The CLI's own settings: $XDG_CONFIG_HOME/boxmaker/cli.json (default ~/.config). */
export interface CliConfig {
  /** How the file is named in messages: under ~ when it is there. */
  file: string;
  socket?: string;
  /** run's and chat's --mode for a new session when none is given. */
  mode?: PermissionMode;
}

function cliConfigPath(env: NodeJS.ProcessEnv, home: string): string {
  return join(env.XDG_CONFIG_HOME || join(home, ".config"), "boxmaker", "cli.json");
}

/** `path` under ~ when it is in the home directory: the way a person would type it. */
function tildeOf(path: string, home: string): string {
  const r = home ? relative(home, path) : "..";
  return r && !r.startsWith("..") && !isAbsolute(r) ? `~/${r}` : path;
}

/** The config file, checked; no file is no settings. A file that says something wrong is one line naming it and the key. */
export function loadCliConfig(env: NodeJS.ProcessEnv, home: string): CliConfig {
  const path = cliConfigPath(env, home);
  const file = tildeOf(path, home);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { file };
    throw new UsageError(`${file}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${file}: not JSON (${(err as Error).message})`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new UsageError(`${file}: must be a JSON object such as {"socket": "/run/boxmaker/loopd.sock"}`);
  const config: CliConfig = { file };
  for (const [key, v] of Object.entries(raw)) {
    if (key === "socket") {
      if (typeof v !== "string" || !isAbsolute(v))
        throw new UsageError(`${file}: "socket" must be the absolute path of loopd's socket, not ${JSON.stringify(v)}`);
      config.socket = v;
    } else if (key === "mode") {
      const mode = typeof v === "string" ? parseMode(v) : undefined;
      if (!mode)
        throw new UsageError(`${file}: "mode" must be one of ${PERMISSION_MODES.join(", ")}, not ${JSON.stringify(v)}`);
      config.mode = mode;
    } else {
      throw new UsageError(`${file}: unknown key "${key}" (the keys are "socket" and "mode")`);
    }
  }
  return config;
}
