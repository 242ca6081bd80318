import { closeSync, openSync, readSync, statSync } from "node:fs";

/** Enough for a daemon's last lines; a log that grew more since its start is read from its end. */
const TAIL_BYTES = 64 * 1024;

/**
 * What a daemon said last before dying, from its log (stdout and stderr both
 * go there): the last line that is neither a pino JSON record nor part of a
 * stack trace. A daemon that refuses to start says why in one such line on
 * stderr (runMain in @boxmaker/common: a config error, a socket or state
 * directory in use), and that line is what `boxmaker up` should show instead
 * of an exit status and a log path. `from` is where this run's output begins;
 * a log now shorter than that was rotated (emptied) since, so what is in it is
 * all this run's and is read from its start.
 */
export function lastWords(logPath: string, from: number): string | undefined {
  let fd: number | undefined;
  try {
    const size = statSync(logPath).size;
    const start = Math.max(from > size ? 0 : from, size - TAIL_BYTES);
    if (size <= start) return undefined;
    const buf = Buffer.alloc(size - start);
    fd = openSync(logPath, "r");
    const n = readSync(fd, buf, 0, buf.length, start);
    return lastPlainLine(buf.subarray(0, n).toString("utf8"));
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function lastPlainLine(text: string): string | undefined {
  const lines = text.split("\n").map((l) => l.trimEnd());
  return lines.reverse().find((l) => l !== "" && !/^[\s{]/.test(l) && !l.startsWith("Node.js v"));
}
