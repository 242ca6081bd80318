import { DEFAULT_SOCKETS } from "@boxmaker/common/lite";
import { existsSync } from "node:fs";
import { createConnection } from "node:net";
import { DaemonUnreachable } from "./errors.js";

/** --socket, then BOXMAKER_SOCKET, then the system default. */
export function resolveSocket(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return flag || env.BOXMAKER_SOCKET || DEFAULT_SOCKETS.loopd;
}

/**
 * Resolves once something accepts connections on the socket. A socket file
 * left behind by a dead daemon would otherwise surface as a gRPC UNAVAILABLE
 * that looks just like loopd reporting a dead brokerd.
 */
function probe(socket: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const c = createConnection(socket);
    c.once("connect", () => {
      c.destroy();
      resolve();
    });
    c.once("error", (err: NodeJS.ErrnoException) => {
      c.destroy();
      reject(
        new DaemonUnreachable(socket, err.code === "ECONNREFUSED" ? "nothing is listening" : (err.code ?? err.message)),
      );
    });
  });
}

/** A typed LoopService client; loaded lazily so `--help` never pays for gRPC. */
export async function connect(socket: string) {
  if (!existsSync(socket)) throw new DaemonUnreachable(socket, "no such socket");
  const [{ createHttp2Client, LoopService }] = await Promise.all([import("@boxmaker/common/client"), probe(socket)]);
  return createHttp2Client(LoopService, socket);
}

export type LoopClient = Awaited<ReturnType<typeof connect>>;
