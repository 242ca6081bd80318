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

type DiskUsageInit = MessageInitShape<typeof DiskUsageSchema>;

/** What the stack keeps on disk, for `boxmaker status`: session logs here, blobs from brokerd, slot files from inferproxy. */
export async function diskUsage(
  sessionsDir: string,
  infer: Pick<ClientOf<typeof InferService>, "slotFiles">,
  broker: Pick<ClientOf<typeof BrokerService>, "blobStat">,
  opts: { signal?: AbortSignal; timeoutMs: number; waitForReady?: boolean },
): Promise<DiskUsageInit> {
  const [sessions, blobs, slots] = await Promise.all([
    dirBytes(sessionsDir),
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
    sessionFiles: sessions.files,
    ...(blobs ? { blobBytes: blobs.bytes, blobs: blobs.blobs, blobCapBytes: blobs.capBytes } : {}),
    ...slotPart,
  };
}

/** The regular files directly in `dir`: session logs and their index. */
async function dirBytes(dir: string): Promise<{ bytes: number; files: number }> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    // Status reports what it can: a directory it cannot list counts as nothing.
    return { bytes: 0, files: 0 };
  }
  let bytes = 0;
  let files = 0;
  for (const n of names) {
    const st = await lstat(join(dir, n)).catch(() => undefined);
    if (!st?.isFile()) continue;
    bytes += st.size;
    if (n.endsWith(".jsonl")) files++;
  }
  return { bytes, files };
}
