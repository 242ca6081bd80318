/**
 * Which files a log rotation touches, decided from names and sizes alone, so
 * it is tested without files or processes (log-rotator.ts does the I/O).
 * `<name>.log` is the live log; `<name>.log.1` … `.<keep>` the older ones,
 * `.1` the newest, each `.gz` once it is compressed.
 */
export interface LogRotationLimits {
  /** A live log past this many bytes is rotated. */
  maxBytes: number;
  /** Older files kept beside the live one; 0 keeps none (a rotation only empties the log). */
  keep: number;
  /** Whether older files but the newest (`.2` on) are gzip-compressed; `.1` stays plain for `tail` and `grep`. */
  compress: boolean;
}

export const DEFAULT_LOG_ROTATION: LogRotationLimits = { maxBytes: 16 * 1024 * 1024, keep: 4, compress: true };

/** The most a log takes on disk under these limits, one check interval's growth aside (compression not counted). */
export const boundBytes = (l: LogRotationLimits): number => (l.keep + 1) * l.maxBytes;

export type RotationStep =
  | { op: "remove"; file: string }
  | { op: "rename"; from: string; to: string }
  /** Copy the live log's content to `to`, then truncate it to 0 (the daemon keeps writing to its own descriptor). */
  | { op: "copy-truncate"; from: string; to: string }
  /** Empty the live log, keeping nothing (keep 0). */
  | { op: "truncate"; file: string }
  /** Compress `from` into `to`, then remove `from`. */
  | { op: "gzip"; from: string; to: string };

interface Rotated {
  file: string;
  index: number;
  gz: boolean;
}

/** The older files of `base` among `names` (a directory's entries), with their index; other names are not ours. */
export function rotatedFiles(base: string, names: readonly string[]): Rotated[] {
  const out: Rotated[] = [];
  for (const file of names) {
    if (!file.startsWith(`${base}.`)) continue;
    const m = /^([1-9]\d{0,5})(\.gz)?$/.exec(file.slice(base.length + 1));
    if (m) out.push({ file, index: Number(m[1]), gz: !!m[2] });
  }
  return out;
}

/**
 * The steps of one rotation of `base` (a file name, e.g. `brokerd.log`) whose
 * live size is `size`, given the directory's `names`; [] when it is within the
 * limit. In order: the oldest files (index `keep` and past) removed, the others
 * shifted up by one from the oldest down (so no rename lands on a file still
 * there), the live log copied to `.1` and emptied, then the one that just
 * became `.2` compressed.
 */
export function planRotation(
  base: string,
  size: number,
  names: readonly string[],
  limits: LogRotationLimits,
): RotationStep[] {
  if (size <= limits.maxBytes) return [];
  const rotated = rotatedFiles(base, names);
  const steps: RotationStep[] = rotated
    .filter((r) => r.index >= limits.keep)
    .map((r) => ({ op: "remove", file: r.file }));
  if (limits.keep === 0) return [...steps, { op: "truncate", file: base }];
  const kept = rotated.filter((r) => r.index < limits.keep).sort((a, b) => b.index - a.index);
  for (const r of kept) steps.push({ op: "rename", from: r.file, to: `${base}.${r.index + 1}${r.gz ? ".gz" : ""}` });
  steps.push({ op: "copy-truncate", from: base, to: `${base}.1` });
  if (limits.compress) {
    // Every plain file from .2 on after the shift: the one that was .1, and any a run with compression off left.
    for (const r of kept)
      if (!r.gz) steps.push({ op: "gzip", from: `${base}.${r.index + 1}`, to: `${base}.${r.index + 1}.gz` });
  }
  return steps;
}
