import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { rotatedFiles } from "./log-rotation-plan.js";
import type { StackLogs } from "./stack-record.js";

/** One process's log as `status` shows it: the live file and the older ones rotation kept. */
export interface LogFileSize {
  name: string;
  bytes: number;
  older: number;
  olderBytes: number;
}

/** The sizes of the logs `up` recorded, as they are on disk now; a file not there (yet) counts 0. */
export function logFileSizes(logs: StackLogs): LogFileSize[] {
  let entries: string[] = [];
  try {
    entries = readdirSync(logs.dir);
  } catch {
    // The state dir went away under a running `up`: every log counts 0.
  }
  const size = (f: string) => {
    try {
      return statSync(join(logs.dir, f)).size;
    } catch {
      return 0;
    }
  };
  return logs.names.map((name) => {
    const older = rotatedFiles(name, entries);
    return {
      name,
      bytes: entries.includes(name) ? size(name) : 0,
      older: older.length,
      olderBytes: older.reduce((n, r) => n + size(r.file), 0),
    };
  });
}
