import { closeSync, fstatSync, openSync, readSync } from "node:fs";

/** Enough of a log's end to hold the last few lines; a daemon's last words are one line. */
const TAIL_BYTES = 64 * 1024;
const MAX_LINE_CHARS = 500;
/** pino's level for error; fatal is 60. */
const PINO_ERROR = 50;

/**
 * The last error a daemon wrote, as one line: what `up` says when the daemon
 * exits, instead of sending the person to its log. runMain writes a bad
 * config as one plain line (`…/loopd.json: key "budgetz" is not a known
 * setting`) and anything else as `fatal: …`; pino's lines are JSON, and only
 * those at error or fatal count. A stack trace's frames are not the error.
 */
export function lastErrorLine(text: string): string | undefined {
  const lines = text.split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!.trimEnd();
    if (!line || /^\s/.test(line) || line.startsWith("--- ")) continue;
    const said = line.startsWith("{") ? pinoError(line) : line;
    if (said === null) continue;
    if (said !== undefined) return said.length > MAX_LINE_CHARS ? `${said.slice(0, MAX_LINE_CHARS)}…` : said;
  }
  return undefined;
}

/** A pino line's message if it is an error; null for a lower level; the line itself if it is not pino's. */
function pinoError(line: string): string | null | undefined {
  let entry: { level?: unknown; msg?: unknown; err?: { message?: unknown } };
  try {
    entry = JSON.parse(line) as typeof entry;
  } catch {
    return line;
  }
  if (typeof entry.level !== "number") return line;
  if (entry.level < PINO_ERROR) return null;
  const msg = typeof entry.msg === "string" ? entry.msg : "";
  const err = typeof entry.err?.message === "string" ? entry.err.message : "";
  return [msg, err].filter(Boolean).join(": ") || null;
}

/** The last error line written to the log at `path` from byte `from` on (this start's output); undefined if none. */
export function lastErrorLineOf(path: string, from: number): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return undefined;
  }
  try {
    const size = fstatSync(fd).size;
    const start = Math.max(from, size - TAIL_BYTES);
    const buf = Buffer.alloc(Math.max(0, size - start));
    const n = buf.length ? readSync(fd, buf, 0, buf.length, start) : 0;
    return lastErrorLine(buf.subarray(0, n).toString("utf8"));
  } finally {
    closeSync(fd);
  }
}
