import { SOCKET_FILES } from "@boxmaker/common/lite";
import { join } from "node:path";
import { userRuntimeDir } from "../stack-record.js";

/** Where `boxmaker up` puts everything: sockets under the runtime dir, the rest under the state dir. */
export interface Layout {
  runtimeDir: string;
  stateDir: string;
  logDir: string;
  configDir: string;
  /** llama-server's --slot-save-path (session parking). */
  slotDir: string;
  brokerState: string;
  loopdState: string;
  sockets: { llama: string; inferproxy: string; brokerd: string; loopd: string };
}

/** sun_path is 108 bytes on Linux, including the terminating NUL. */
const MAX_SOCKET_PATH = 107;

export function layoutFor(runtimeDir: string, stateDir: string): Layout {
  return {
    runtimeDir,
    stateDir,
    logDir: join(stateDir, "logs"),
    // Generated configs live with the sockets: they are rewritten on every `up`
    // and describe this run, not durable state.
    configDir: runtimeDir,
    slotDir: join(stateDir, "slots"),
    brokerState: join(stateDir, "broker"),
    loopdState: join(stateDir, "loopd"),
    sockets: {
      llama: join(runtimeDir, SOCKET_FILES.llama),
      inferproxy: join(runtimeDir, SOCKET_FILES.inferproxy),
      brokerd: join(runtimeDir, SOCKET_FILES.brokerd),
      loopd: join(runtimeDir, SOCKET_FILES.loopd),
    },
  };
}

/** The user's runtime dir, where the CLI also looks for the stack `up` recorded. */
export const defaultRuntimeDir = userRuntimeDir;

/** $XDG_STATE_HOME/boxmaker, else ~/.local/state/boxmaker (the XDG default). */
export function defaultStateDir(env: NodeJS.ProcessEnv, home: string): string {
  return join(env.XDG_STATE_HOME || join(home, ".local", "state"), "boxmaker");
}

/** A socket path too long to bind fails deep inside a daemon; say so up front. */
export function checkSocketPaths(layout: Layout): string | undefined {
  for (const p of Object.values(layout.sockets)) {
    if (Buffer.byteLength(p) > MAX_SOCKET_PATH) {
      return `socket path ${p} is longer than ${MAX_SOCKET_PATH} bytes; choose a shorter --runtime-dir`;
    }
  }
  return undefined;
}
