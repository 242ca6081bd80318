import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { DaemonUnreachable } from "./errors.js";
import { runningStack, sourceText, type SocketChoice } from "./socket-choice.js";
import type { StackRecord } from "./stack-record.js";

/**
 * The one line for a loopd the CLI could not connect to: which socket and why
 * it looked there, what actually went wrong, and what to do about it — start
 * a stack only when none runs, and the running one when another was asked for.
 */
export async function unreachable(
  choice: SocketChoice,
  err: NodeJS.ErrnoException,
  record: string | undefined,
): Promise<DaemonUnreachable> {
  const running = record && choice.source.kind !== "up" ? await runningStack(record) : undefined;
  const what = causeOf(choice.path, err);
  return new DaemonUnreachable(
    choice.path,
    `cannot reach loopd at ${choice.path} (${sourceText(choice.source)}): ${what}; ${whatToDo(choice, err, running)}`,
  );
}

function causeOf(path: string, err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case "ENOENT":
      return "no such socket";
    case "ECONNREFUSED":
      return "nobody is listening (a socket file left behind by a loopd that stopped)";
    case "EACCES":
    case "EPERM":
      return denied(path);
    default:
      return err.code ?? err.message;
  }
}

/**
 * For a socket the person chose (flag, environment, CLI config): how to use the
 * running stack instead, and how to correct the choice. One place per source.
 */
function remedy(source: SocketChoice["source"]): { use: string; fix: string } | undefined {
  switch (source.kind) {
    case "flag":
      return { use: "pass that to --socket, or leave --socket out", fix: ", or correct --socket" };
    case "env":
      return { use: "unset BOXMAKER_SOCKET to use it", fix: ", or correct BOXMAKER_SOCKET" };
    case "config":
      return { use: `remove "socket" from ${source.file} to use it`, fix: `, or correct "socket" in ${source.file}` };
    default:
      return undefined;
  }
}

function whatToDo(choice: SocketChoice, err: NodeJS.ErrnoException, running: StackRecord | undefined): string {
  const { source } = choice;
  if (running && running.loopdSocket !== choice.path) {
    const use = remedy(source)?.use ?? "pass it to --socket";
    return `the stack \`boxmaker up\` started (pid ${running.pid}) is at ${running.loopdSocket}: ${use}`;
  }
  if (source.kind === "up")
    return `\`boxmaker up\` (pid ${source.stack.pid}) runs this stack but its loopd does not answer: see ${source.stack.stateDir}/logs/loopd.log`;
  // The socket is there and someone serves it: starting another stack is no answer.
  if (err.code === "EACCES" || err.code === "EPERM")
    return "or point --socket / BOXMAKER_SOCKET at a stack of your own";
  const fix = remedy(source)?.fix ?? "";
  return `no stack is running: start one with \`boxmaker up\` or \`systemctl start boxmaker-loopd\`${fix}`;
}

/**
 * What permission is missing, and whose: the first directory on the way this
 * user may not enter, else the socket itself (connecting needs write on it).
 */
function denied(path: string): string {
  const dirs: string[] = [];
  for (let d = dirname(path); ; d = dirname(d)) {
    dirs.unshift(d);
    if (d === dirname(d)) break;
  }
  const blocked = dirs.find((d) => !may(d, constants.X_OK));
  const target = blocked ?? path;
  const needs = blocked ? { bit: 0o010, what: "enter" } : { bit: 0o020, what: "write to" };
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(target);
  } catch {
    return `permission denied`;
  }
  const owner = nameOf("/etc/passwd", st.uid);
  const group = nameOf("/etc/group", st.gid);
  const mode = (st.mode & 0o777).toString(8).padStart(3, "0");
  const whose = `${blocked ? "the directory " : ""}${target} is ${owner}:${group} mode ${mode}`;
  // Only the group's bit lets another user in without becoming the owner.
  const fix =
    st.mode & needs.bit
      ? `join group ${group} (\`sudo usermod -aG ${group} $USER\`, then log in again) or run as ${owner}`
      : st.mode & (needs.bit << 3)
        ? `only ${owner} may ${needs.what} it: run as ${owner}`
        : `its mode lets nobody ${needs.what} it`;
  return `permission denied (${whose}); ${fix}`;
}

function may(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

/** A user or group name from passwd/group; the number when it has none there. */
function nameOf(file: string, id: number): string {
  try {
    for (const line of readFileSync(file, "utf8").split("\n")) {
      const [name, , num] = line.split(":");
      if (name && Number(num) === id) return name;
    }
  } catch {
    // No such file (a minimal container): the number is all there is.
  }
  return String(id);
}
