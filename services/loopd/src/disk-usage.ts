import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import {
  toRpcError,
  type BrokerService,
  type ClientOf,
  type DiskUsageSchema,
  type InferService,
} from "@boxmaker/common";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { COMPRESSED } from "./sessions/log-compression.js";
import type { LogRetention } from "./sessions/log-compression.js";

type DiskUsageInit = MessageInitShape<typeof DiskUsageSchema>;

/** The session logs as `status` counts them: which are archived, and when they are compressed. */
export interface SessionLogsView {
  dir: string;
  /** Whether the session of this id is archived; undefined when it is not a session's log. */
  archived(id: string): boolean | undefined;
  retention: LogRetention;
}

/** What the stack keeps on disk, for `boxmaker status`: session logs here, blobs from brokerd, slot files from inferproxy. */
export async function diskUsage(
  logs: SessionLogsView,
  infer: Pick<ClientOf<typeof InferService>, "slotFiles">,
  broker: Pick<ClientOf<typeof BrokerService>, "blobStat">,
  opts: { signal?: AbortSignal; timeoutMs: number; waitForReady?: boolean },
): Promise<DiskUsageInit> {
  const [sessions, blobs, slots] = await Promise.all([
    dirBytes(logs.dir),
    broker.blobStat({}, opts).catch(() => undefined),
    infer.slotFiles({}, opts).catch((err: unknown) => toRpcError(err)),
  ]);
  const slotPart =
    slots instanceof Error
      ? { slotFilesNote: `inferproxy did not answer: ${slots.message}` }
      : {
          slotFilesManaged: slots.managed,
          slotDir: slots.dir,
          slotFileBytes: slots.totalBytes,
          slotFiles: slots.files.length,
          slotCapBytes: slots.capBytes,
          slotFilesNote: slots.unmanagedReason,
        };
  return {
    sessionBytes: BigInt(sessions.bytes),
    sessionFiles: sessions.logs.length,
    retention: logRetentionRows(sessions.logs, logs),
    ...(blobs ? { blobBytes: blobs.bytes, blobs: blobs.blobs, blobCapBytes: blobs.capBytes } : {}),
    ...slotPart,
  };
}

/** One session log on disk: its session's id, size, and whether it is compressed. */
interface LogFile {
  id: string;
  bytes: number;
  compressed: boolean;
}

/** The regular files directly in `dir` (session logs and their index), and the logs among them. */
async function dirBytes(dir: string): Promise<{ bytes: number; logs: LogFile[] }> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    // Status reports what it can: a directory it cannot list counts as nothing.
    return { bytes: 0, logs: [] };
  }
  let bytes = 0;
  const logs: LogFile[] = [];
  for (const n of names) {
    const st = await lstat(join(dir, n)).catch(() => undefined);
    if (!st?.isFile()) continue;
    bytes += st.size;
    const compressed = n.endsWith(`.jsonl${COMPRESSED}`);
    if (compressed || n.endsWith(".jsonl"))
      logs.push({ id: n.slice(0, n.lastIndexOf(".jsonl")), bytes: st.size, compressed });
  }
  return { bytes, logs };
}

/** The archived and the other session logs, each with when it is compressed: what `status` shows of them. */
function logRetentionRows(files: LogFile[], view: SessionLogsView) {
  const row = (store: string, archived: boolean, days: number, key: string) => {
    const mine = files.filter((f) => (view.archived(f.id) ?? false) === archived);
    const packed = mine.filter((f) => f.compressed).length;
    return {
      store,
      dir: view.dir,
      entries: mine.length,
      entriesUnit: `log${mine.length === 1 ? "" : "s"}, ${packed} compressed`,
      bytes: BigInt(mine.reduce((n, f) => n + f.bytes, 0)),
      keepDays: days,
      action: "compressed",
      keys: `session_logs.${key}`,
    };
  };
  const r = view.retention;
  return [
    row("archived session logs", true, r.compress_archived_after_days, "compress_archived_after_days"),
    row("other session logs", false, r.compress_idle_after_days, "compress_idle_after_days"),
  ];
}
