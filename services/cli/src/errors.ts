import { BoxmakerError } from "@boxmaker/common/lite";

/**
 * The CLI's own failures. main.ts turns each into an exit code by class;
 * `code` is what scripts and tests may match on.
 */

/** Bad input from the person at the keyboard (a flag, an override file): exit 2 with one line. */
export class UsageError extends BoxmakerError {
  constructor(message: string, options?: ErrorOptions) {
    super("USAGE", message, options);
  }
}

/** Nothing accepts connections on loopd's socket: exit 6 with one line (unreachable.ts says what and why). */
export class DaemonUnreachable extends BoxmakerError {
  constructor(
    readonly socket: string,
    message: string,
  ) {
    super("DAEMON_UNREACHABLE", message);
  }
}

/** A daemon `boxmaker up` started did not become ready (timed out, exited, or reported a fatal problem). */
export class NotReadyError extends BoxmakerError {
  constructor(message: string, options?: ErrorOptions) {
    super("NOT_READY", message, options);
  }
}
