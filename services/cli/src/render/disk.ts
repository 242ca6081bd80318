import type { DiskUsage, StoreRetention } from "@boxmaker/common/client";
import type { Style } from "./style.js";

/** Bytes in binary units, one decimal from KiB up: how `status` sizes what is on disk. */
export function formatBytes(n: bigint | number): string {
  let v = Number(n);
  if (v < 1024) return `${v} B`;
  for (const unit of ["KiB", "MiB", "GiB", "TiB"]) {
    v /= 1024;
    if (v < 1024 || unit === "TiB") return `${v.toFixed(1)} ${unit}`;
  }
  return `${v} B`;
}

const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The rows of status's disk section: session logs, blobs and parked slot files, each against its cap. */
export function diskRows(d: DiskUsage | undefined, s: Style): string[][] {
  if (!d) return [["disk", s.dim("unknown (loopd did not say)")]];
  const cap = (used: bigint, capBytes: bigint) =>
    capBytes > 0n
      ? ` of ${formatBytes(capBytes)}${used > capBytes ? s.red(" (over the cap)") : ""}`
      : s.dim(" (no cap)");
  const blobs =
    d.blobCapBytes > 0n || d.blobs > 0
      ? `${formatBytes(d.blobBytes)}${cap(d.blobBytes, d.blobCapBytes)}, ${count(d.blobs, "blob")}`
      : s.dim("unknown: brokerd did not answer");
  const slots = d.slotFilesManaged
    ? `${formatBytes(d.slotFileBytes)}${cap(d.slotFileBytes, d.slotCapBytes)}, ${count(d.slotFiles, "parked session")} (${d.slotDir})`
    : s.dim(`not counted: ${d.slotFilesNote || "inferproxy manages no slot-save directory"}`);
  return [
    ["sessions", `${formatBytes(d.sessionBytes)}, ${count(d.sessionFiles, "log")}`],
    ["blobs", blobs],
    ["slot files", slots],
  ];
}

/** What a retention keeps, in words: "kept 30 days, the newest 1000 sessions" ("kept for good" when unbounded). */
function keptFor(r: StoreRetention): string {
  // Compressed logs lose nothing: said so, so nobody reads "30 days" as a deletion.
  if (r.action === "compressed")
    return r.keepDays
      ? `compressed ${r.keepDays} day${r.keepDays === 1 ? "" : "s"} after their last record, never deleted`
      : "never compressed (no limit set)";
  const parts = [
    ...(r.keepDays ? [`${r.keepDays} day${r.keepDays === 1 ? "" : "s"}`] : []),
    ...(r.keepMax ? [`the newest ${r.keepMax} ${r.keepMaxUnit}`] : []),
  ];
  const since = r.letGo ? `, ${r.letGo} ${r.action} since start` : "";
  return parts.length ? `kept ${parts.join(", at most ")}, then ${r.action}${since}` : "kept for good (no limit set)";
}

/**
 * The rows of the stores a retention bounds (checkpoints, decided proposals,
 * archived session logs): what is kept and its size, the limit, and the keys
 * that set it, so an operator reads and sets them in one place.
 */
export function retentionRows(stores: readonly StoreRetention[], s: Style): string[][] {
  return stores.map((r) => [
    r.store,
    `${formatBytes(r.bytes)}, ${r.entries} ${r.entriesUnit}; ${keptFor(r)} ${s.dim(`(${r.keys})`)}`,
  ]);
}
