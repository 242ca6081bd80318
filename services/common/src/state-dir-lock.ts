import { readFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { setTimeout as sleep } from "node:timers/promises";
import { BoxmakerError, messageOf } from "./boxmaker-error.js";
import { ConfigError, makeConfiguredDir } from "./config.js";
import { atomicWrite } from "./durable-file.js";

/**
 * One writer per state directory. Two daemons on the same session logs (a
 * second `boxmaker up` with another --runtime-dir, or `up` beside systemd)
 * each append their own view of a session and one of them loses turns it
 * acknowledged. So each daemon that owns a directory holds an exclusive lock
 * on it for its lifetime, and a second one refuses to start.
 *
 * The lock is SQLite's: an open `BEGIN EXCLUSIVE` on LOCK_FILE, which is a
 * POSIX fcntl() lock underneath. The kernel drops it when the process dies,
 * however it dies, so a crash never leaves anything to unlock by hand (a pid
 * file would: its pid may be reused, and under ProtectProc=invisible another
 * user's pid cannot even be looked up). Node has no flock(); an abstract Unix
 * socket as the lock would not work either, since those are per network
 * namespace and the systemd units run with PrivateNetwork=yes.
 *
 * A locked database cannot be read by anyone else, so who holds it is in a
 * sidecar JSON file, HOLDER_FILE, written after the lock is taken.
 */
export const LOCK_FILE = "boxmaker.lock";
export const HOLDER_FILE = "boxmaker.lock.json";

/**
 * How long an acquire waits on SQLite's busy handler. Not for the holder to
 * go away: two daemons starting at the same instant both take SQLite's shared
 * lock on the way to the exclusive one, and with no wait at all each could
 * find the other's shared lock and both refuse. The loser gives its shared
 * lock up at once, so the winner waits a few milliseconds; a refusal takes
 * this long.
 */
const BUSY_WAIT_MS = 250;
/** How long a refused daemon waits for the holder to record itself (it writes HOLDER_FILE just after locking). */
const HOLDER_WAIT_MS = 2_000;
const SQLITE_BUSY = 5;

export interface StateDirHolder {
  daemon: string;
  pid: number;
  socket: string;
  /** When the holder took the lock (ISO 8601). */
  started: string;
}

/** Another live daemon holds the directory: exit 1 and one line, like a socket still served (SocketInUseError). */
export class StateDirInUseError extends BoxmakerError {
  constructor(
    message: string,
    readonly holder: StateDirHolder | undefined,
  ) {
    super("STATE_DIR_IN_USE", message);
  }
}

export interface StateDirLock {
  readonly dir: string;
  /** Removes the holder record and drops the lock (process exit drops it too). */
  release(): void;
}

export interface LockOptions {
  daemon: string;
  socket: string;
  /** The config key naming the directory, for the messages ("state_dir", "slot_files.dir"). */
  key: string;
}

/**
 * Takes `dir`'s lock, creating the directory if need be, and records the
 * holder. Throws StateDirInUseError naming the holder when another process
 * has it, ConfigError when the directory cannot be made or locked at all.
 */
export async function lockStateDir(dir: string, o: LockOptions): Promise<StateDirLock> {
  makeConfiguredDir(dir, o.key);
  const lockPath = join(dir, LOCK_FILE);
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(lockPath, { timeout: BUSY_WAIT_MS });
  } catch (err) {
    throw new ConfigError(`key "${o.key}": cannot lock ${dir}: ${messageOf(err)}`, { cause: err });
  }
  try {
    db.exec("BEGIN EXCLUSIVE");
  } catch (err) {
    db.close();
    if ((err as { errcode?: number }).errcode !== SQLITE_BUSY) {
      throw new ConfigError(`key "${o.key}": cannot lock ${lockPath}: ${messageOf(err)}`, { cause: err });
    }
    const holder = await awaitHolder(dir);
    throw new StateDirInUseError(inUseMessage(dir, o.key, holder), holder);
  }
  const holderPath = join(dir, HOLDER_FILE);
  const me: StateDirHolder = {
    daemon: o.daemon,
    pid: process.pid,
    socket: o.socket,
    started: new Date().toISOString(),
  };
  atomicWrite(holderPath, `${JSON.stringify(me)}\n`);
  let released = false;
  return {
    dir,
    release: () => {
      if (released) return;
      released = true;
      // The record first: while the lock is still ours, nobody else can have written it.
      try {
        unlinkSync(holderPath);
      } catch {
        // Already gone: nothing to tidy.
      }
      db.close();
    },
  };
}

/** The one line a refused daemon prints: whose the directory is, and what to do. */
export function inUseMessage(dir: string, key: string, holder: StateDirHolder | undefined): string {
  const who = holder
    ? `${holder.daemon} pid ${holder.pid} (socket ${holder.socket}, since ${holder.started})`
    : "another process (it has not recorded which yet)";
  return `${dir} is in use by ${who}: stop that one, or give this one another ${key}`;
}

/** The holder's record, waiting briefly while it is missing or left by a holder that died. */
async function awaitHolder(dir: string): Promise<StateDirHolder | undefined> {
  const deadline = Date.now() + HOLDER_WAIT_MS;
  for (;;) {
    const h = readHolder(dir);
    if ((h && isAlive(h.pid)) || Date.now() >= deadline) return h;
    await sleep(50);
  }
}

/** Who holds `dir`, from its record; undefined when there is none or it cannot be read. */
export function readHolder(dir: string): StateDirHolder | undefined {
  try {
    const h = JSON.parse(readFileSync(join(dir, HOLDER_FILE), "utf8")) as Partial<StateDirHolder>;
    if (typeof h.daemon === "string" && typeof h.pid === "number" && typeof h.socket === "string") {
      return { daemon: h.daemon, pid: h.pid, socket: h.socket, started: String(h.started ?? "?") };
    }
  } catch {
    // Missing or not a record: the holder is unknown.
  }
  return undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, it is just another user's (systemd's boxmaker user).
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
