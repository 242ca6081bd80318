import { existsSync } from "node:fs";

export const DEFAULT_SOCKET = "/run/boxmaker/loopd.sock";

/** --socket, then BOXMAKER_SOCKET, then the system default. */
export function resolveSocket(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return flag || env.BOXMAKER_SOCKET || DEFAULT_SOCKET;
}

export class DaemonUnreachable extends Error {
  override readonly name = "DaemonUnreachable";
  constructor(readonly socket: string, detail: string) {
    super(
      `cannot reach loopd at ${socket} (${detail}); start the stack with \`boxmaker up\` or \`systemctl start boxmaker-loopd\`, or point --socket / BOXMAKER_SOCKET at it`,
    );
  }
}

/** A typed LoopService client; loaded lazily so `--help` never pays for gRPC. */
export async function connect(socket: string) {
  if (!existsSync(socket)) throw new DaemonUnreachable(socket, "no such socket");
  const { createClient, LoopService } = await import("@boxmaker/common");
  return createClient(LoopService, socket);
}

export type LoopClient = Awaited<ReturnType<typeof connect>>;
