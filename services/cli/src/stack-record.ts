import { lstatSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { LogRotationLimits } from "./log-rotation-plan.js";

/**
 * Where `boxmaker up` says which stack it runs, so a new shell finds it
 * without BOXMAKER_SOCKET: one file in the user's runtime dir, written once
 * the stack is ready and removed when it stops. A record whose `up` is gone
 * (killed hard, the machine rebooted into the same /tmp) is stale and ignored.
 */
export interface StackRecord {
  loopdSocket: string;
  runtimeDir: string;
  stateDir: string;
  /** `boxmaker up`'s own pid. */
  pid: number;
  /** The processes' logs and the limits `up` rotates them at, for `status` (absent in a record of an older `up`). */
  logs?: StackLogs;
}

export interface StackLogs extends LogRotationLimits {
  dir: string;
  /** The live logs' file names in `dir`, e.g. brokerd.log. */
  names: string[];
}

/** $XDG_RUNTIME_DIR/boxmaker when there is one (per user, tmpfs, mode 0700), else a per-user temp dir. */
export function userRuntimeDir(env: NodeJS.ProcessEnv, tmp: string, uid: number): string {
  return env.XDG_RUNTIME_DIR ? join(env.XDG_RUNTIME_DIR, "boxmaker") : join(tmp, `boxmaker-${uid}`);
}

export const stackRecordPath = (env: NodeJS.ProcessEnv, tmp: string, uid: number): string =>
  join(userRuntimeDir(env, tmp, uid), "stack.json");

/**
 * Why the record's directory cannot be trusted, or undefined when it can: in a
 * shared /tmp anyone may create boxmaker-UID first and plant a record pointing
 * the CLI at their own socket, so it must be a real directory of this user
 * that nobody else may enter.
 */
function untrustedDir(dir: string, uid: number): string | undefined {
  const st = lstatSync(dir);
  if (!st.isDirectory()) return `${dir} is not a directory`;
  if (st.uid !== uid) return `${dir} belongs to uid ${st.uid}, not ${uid}`;
  if (st.mode & 0o077) return `${dir} has mode ${(st.mode & 0o777).toString(8)}, not 700`;
  return undefined;
}

/** Records the stack; a problem is returned, not thrown: a stack that runs is worth more than its record. */
export function writeStackRecord(file: string, rec: StackRecord, uid: number): string | undefined {
  const dir = join(file, "..");
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const bad = untrustedDir(dir, uid);
    if (bad) return bad;
    // Written whole and renamed, so a CLI starting meanwhile never reads half a record.
    const part = `${file}.${process.pid}.part`;
    writeFileSync(part, `${JSON.stringify(rec, null, 2)}\n`, { mode: 0o600 });
    renameSync(part, file);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Removes the record if it is still this `up`'s: a later `up` may have recorded its own stack since. */
export function removeStackRecord(file: string, pid: number): void {
  if (readStackRecord(file, process.getuid?.() ?? 0)?.pid !== pid) return;
  try {
    unlinkSync(file);
  } catch {
    // Gone already: nothing to remove.
  }
}

/** The recorded stack, or undefined when there is none, it is unreadable, or its directory is not trusted. */
export function readStackRecord(file: string, uid: number): StackRecord | undefined {
  try {
    if (untrustedDir(join(file, ".."), uid)) return undefined;
    const r = JSON.parse(readFileSync(file, "utf8")) as Partial<StackRecord>;
    if (
      typeof r.loopdSocket !== "string" ||
      typeof r.runtimeDir !== "string" ||
      typeof r.stateDir !== "string" ||
      !Number.isInteger(r.pid)
    )
      return undefined;
    if (r.logs !== undefined && !wellFormedLogs(r.logs)) delete r.logs;
    return r as StackRecord;
  } catch {
    return undefined;
  }
}

function wellFormedLogs(l: Partial<StackLogs>): boolean {
  return (
    typeof l.dir === "string" &&
    Array.isArray(l.names) &&
    l.names.every((n) => typeof n === "string" && !n.includes("/")) &&
    Number.isInteger(l.maxBytes) &&
    Number.isInteger(l.keep) &&
    typeof l.compress === "boolean"
  );
}
