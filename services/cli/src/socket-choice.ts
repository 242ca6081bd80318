import { DEFAULT_SOCKETS } from "@boxmaker/common/lite";
import { createConnection } from "node:net";
import type { CliConfig } from "./cli-config.js";
import { readStackRecord, type StackRecord } from "./stack-record.js";

/** Where the socket the CLI uses came from, so a message can say why it looked there. */
export type SocketSource =
  | { kind: "flag" }
  | { kind: "env" }
  | { kind: "config"; file: string }
  | { kind: "up"; stack: StackRecord }
  | { kind: "default" }
  /** A stack the command started itself (`boxmaker demo`). */
  | { kind: "own" };

export interface SocketChoice {
  path: string;
  source: SocketSource;
}

/**
 * What another terminal needs to reach this same stack, as a prefix of a
 * command: nothing when it finds the stack the same way (cli.json, the stack
 * `up` recorded, the default socket), else the socket in BOXMAKER_SOCKET
 * (chosen by --socket or the environment, or a stack `demo` started itself).
 */
export function reachPrefix(choice: SocketChoice): string {
  const k = choice.source.kind;
  if (k !== "flag" && k !== "env" && k !== "own") return "";
  const p = choice.path;
  return `BOXMAKER_SOCKET=${/^[\w./-]+$/.test(p) ? p : `'${p.replaceAll("'", "'\\''")}'`} `;
}

/** "from --socket", "from boxmaker up, pid 1234", "system default": what `status` and errors say. */
export function sourceText(s: SocketSource): string {
  switch (s.kind) {
    case "flag":
      return "from --socket";
    case "env":
      return "from BOXMAKER_SOCKET";
    case "config":
      return `from ${s.file}`;
    case "up":
      return `from boxmaker up, pid ${s.stack.pid}`;
    case "default":
      return "system default";
    case "own":
      return "the stack this command started";
  }
}

/** --socket, then BOXMAKER_SOCKET, then cli.json's "socket", then the stack `boxmaker up` runs, then the system default. */
export async function chooseSocket(
  flag: string | undefined,
  env: NodeJS.ProcessEnv,
  config: CliConfig,
  record: string,
): Promise<SocketChoice> {
  if (flag) return { path: flag, source: { kind: "flag" } };
  if (env.BOXMAKER_SOCKET) return { path: env.BOXMAKER_SOCKET, source: { kind: "env" } };
  if (config.socket) return { path: config.socket, source: { kind: "config", file: config.file } };
  const stack = await runningStack(record);
  if (stack) return { path: stack.loopdSocket, source: { kind: "up", stack } };
  return { path: DEFAULT_SOCKETS.loopd, source: { kind: "default" } };
}

/**
 * The stack `boxmaker up` recorded, if it still runs: its `up` is alive and its
 * loopd accepts connections. A record left by an `up` that was killed, or whose
 * pid now belongs to something else, is ignored.
 */
export async function runningStack(record: string): Promise<StackRecord | undefined> {
  const stack = readStackRecord(record, process.getuid?.() ?? 0);
  if (!stack || !pidAlive(stack.pid)) return undefined;
  return (await accepts(stack.loopdSocket)) ? stack : undefined;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, someone else's (a reused pid; the socket check decides).
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function accepts(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection(socket);
    const done = (ok: boolean) => {
      c.destroy();
      resolve(ok);
    };
    c.setTimeout(1000, () => done(false));
    c.once("connect", () => done(true));
    c.once("error", () => done(false));
  });
}
