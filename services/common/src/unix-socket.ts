import { BoxmakerError } from "./errors.js";
import { chmodSync, existsSync, lstatSync, mkdirSync, unlinkSync } from "node:fs";
import { connect } from "node:net";
import { dirname } from "node:path";

/** True when something accepts connections on the socket path. */
export function socketIsLive(path: string, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    const done = (live: boolean) => {
      clearTimeout(t);
      s.destroy();
      resolve(live);
    };
    const t = setTimeout(() => done(false), timeoutMs);
    s.once("connect", () => done(true));
    s.once("error", () => done(false));
  });
}

/** Another live process serves the socket path: starting a second daemon there would steal it. */
export class SocketInUseError extends BoxmakerError {
  constructor(message: string) {
    super("SOCKET_IN_USE", message);
  }
}

/**
 * Makes `path` ready to bind: creates its directory, removes a stale socket a
 * crashed process left behind, and refuses to steal one that is still served.
 */
export async function prepareSocketPath(path: string): Promise<void> {
  mkdirSync(dirname(path), { recursive: true, mode: 0o750 });
  if (!existsSync(path)) return;
  if (!lstatSync(path).isSocket()) {
    throw new SocketInUseError(`${path} exists and is not a socket; refusing to remove it`);
  }
  if (await socketIsLive(path)) {
    throw new SocketInUseError(`${path} is served by another running process`);
  }
  unlinkSync(path);
}

/** Group may connect, others may not: the socket is the daemon's only access control. */
export function restrictSocket(path: string): void {
  chmodSync(path, 0o660);
}

export function removeSocket(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}
