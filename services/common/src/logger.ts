import { pino, type Logger, type LevelWithSilent } from "pino";

export type { Logger };

/** JSON lines on stderr, one logger per daemon; journald keeps them in production. */
export function createLogger(daemon: string, level: LevelWithSilent = "info"): Logger {
  return pino({ name: daemon, level, base: { daemon, pid: process.pid } }, pino.destination({ fd: 2, sync: false }));
}
