import * as grpc from "@grpc/grpc-js";
import { linkSync, lstatSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { CallRegistry } from "./grpc-server.js";
import type { Logger } from "./logger.js";
import { Notifier } from "./notify.js";
import { prepareSocketPath, removeSocket, restrictSocket, SocketInUseError } from "./unix-socket.js";
import { checkSocketPath, ConfigError, MAX_SOCKET_PATH_BYTES, makeConfiguredDir, oneLine } from "./config.js";
import { BoxmakerError, messageOf } from "./errors.js";

export interface DaemonOptions {
  name: string;
  socketPath: string;
  log: Logger;
  /** Adds the daemon's services; `calls` lets shutdown cancel streams that outlive the grace period. */
  register(server: grpc.Server, calls: CallRegistry): void;
  /** Runs first on shutdown, while the server still serves (e.g. closing running turns so their streams end). */
  onStopping?: () => Promise<void> | void;
  /** Releases what the daemon holds (upstream connections, files) after the server has stopped. */
  onStop?: () => Promise<void> | void;
  /** How long in-flight calls may run on after SIGTERM before they are cancelled. */
  shutdownGraceMs?: number;
  notifier?: Notifier;
}

export interface Daemon {
  readonly server: grpc.Server;
  readonly notifier: Notifier;
  /** Tells systemd the daemon is ready. Call once the daemon can do its job, not merely listen. */
  ready(status: string): Promise<void>;
  status(status: string): Promise<void>;
  stop(reason: string): Promise<void>;
}

/**
 * Where the server binds before its socket is linked into place: beside the
 * socket, in the same directory (what decides whether a bind works). A Unix
 * socket's path exists from bind(), before listen(), and a probe listening
 * there first closes under whoever connects: a client that connects the
 * moment the path appears got ECONNREFUSED or ECONNRESET. Bound, listening
 * and restricted here first, the socket appears at its path ready to serve.
 * Undefined when no sibling name fits in a socket path.
 */
function stagingPath(socketPath: string): string | undefined {
  const dir = dirname(socketPath);
  return [`.${process.pid}.sock`, `.${process.pid}`]
    .map((n) => join(dir, n))
    .find((p) => Buffer.byteLength(p) <= MAX_SOCKET_PATH_BYTES);
}

/**
 * Tries the bind with a plain server first: a socket path that cannot be bound
 * (no directory, no permission) is one config line, before grpc-js logs its own
 * multi-line error.
 */
async function probeBind(path: string, socketPath: string): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once("error", (err) =>
      reject(
        new ConfigError(`key "socket": cannot listen on ${socketPath}: ${err.message.replace(path, socketPath)}`, {
          cause: err,
        }),
      ),
    );
    probe.listen(path, () => resolve());
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  removeSocket(path);
}

/** Binds the gRPC server on its Unix socket and installs SIGTERM/SIGINT handling. */
export async function startDaemon(opts: DaemonOptions): Promise<Daemon> {
  const { log, socketPath } = opts;
  checkSocketPath(socketPath);
  const notifier = opts.notifier ?? new Notifier();
  const server = new grpc.Server({
    "grpc.max_receive_message_length": 64 * 1024 * 1024,
    // channelz keeps per-call records for a debugging service we do not expose: CPU on every call.
    "grpc.enable_channelz": 0,
  });
  const calls = new CallRegistry();
  opts.register(server, calls);

  makeConfiguredDir(dirname(socketPath), "socket");
  try {
    await prepareSocketPath(socketPath);
  } catch (err) {
    if (err instanceof SocketInUseError) throw err;
    // Its directory cannot be made (under a file, in /proc, no permission): the config's to fix.
    throw new ConfigError(`key "socket": cannot prepare ${socketPath}: ${messageOf(err)}`, { cause: err });
  }
  const staging = stagingPath(socketPath);
  // Left by a daemon of the same pid that crashed here: ours to remove.
  if (staging && lstatSync(staging, { throwIfNoEntry: false })?.isSocket()) removeSocket(staging);
  // Where no sibling fits, the socket is bound in place and not probed: the path appearing is then the daemon's.
  if (staging) await probeBind(staging, socketPath);
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${staging ?? socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
      // A socket that cannot be bound is a config problem: one line, exit 2, not a stack trace.
      err
        ? reject(
            new ConfigError(
              `key "socket": cannot listen on ${socketPath}: ${(/\[(.*)\]/.exec(err.message)?.[1] ?? err.message).replace(/\s+/g, " ")}`,
            ),
          )
        : resolve(),
    ),
  );
  if (staging) {
    restrictSocket(staging);
    // link(), not rename(): it fails if another daemon took the path meanwhile, instead of stealing it.
    try {
      linkSync(staging, socketPath);
    } catch (err) {
      server.forceShutdown();
      throw new SocketInUseError(`${socketPath} appeared while starting: ${messageOf(err)}`);
    } finally {
      removeSocket(staging);
    }
  } else restrictSocket(socketPath);
  log.info({ socket: socketPath }, "listening");

  let stopping: Promise<void> | undefined;
  const stop = (reason: string): Promise<void> => {
    stopping ??= (async () => {
      log.info({ reason, inFlight: calls.size }, "shutting down");
      await notifier.stopping().catch(() => undefined);
      await opts.onStopping?.();
      const grace = opts.shutdownGraceMs ?? 5_000;
      const timer = setTimeout(() => {
        log.warn({ inFlight: calls.size }, "grace period over; cancelling in-flight calls");
        calls.abortAll(`${opts.name} is shutting down`);
        server.forceShutdown();
      }, grace);
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      clearTimeout(timer);
      await opts.onStop?.();
      removeSocket(socketPath);
      log.info("stopped");
    })();
    return stopping;
  };

  const onSignal = (sig: NodeJS.Signals) => {
    void stop(sig).then(
      () => process.exit(0),
      (err) => {
        log.error({ err }, "unclean shutdown");
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);

  return {
    server,
    notifier,
    ready: async (status) => {
      await notifier.ready(status);
      log.info({ status }, "ready");
    },
    status: (status) => notifier.status(status),
    stop,
  };
}

/**
 * Runs a daemon's main. A bad config is one line on stderr and exit 2, so the
 * operator sees the bad key in `systemctl status` without reading a stack
 * trace, and systemd (RestartPreventExitStatus=2) does not restart it into
 * the same failure. A known failure that may pass (the socket still served by
 * the instance shutting down) is one line and exit 1, restarted; only what
 * nobody foresaw gets its stack.
 */
export function runMain(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    if (err instanceof BoxmakerError) {
      process.stderr.write(`fatal: ${oneLine(err.message)}\n`);
      process.exit(1);
    }
    process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
