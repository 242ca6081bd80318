import {
  closeSync,
  createReadStream,
  createWriteStream,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { planRotation, type LogRotationLimits, type RotationStep } from "../log-rotation-plan.js";

/** How often the logs' sizes are looked at: one stat per log, so cheap; a log outgrows its limit by at most this long's output. */
const LOG_CHECK_INTERVAL_MS = 2_000;

/**
 * Keeps the logs `up` hands its children within their limits (size-based,
 * log-rotation-plan.ts decides which files move). A child holds its log open
 * with O_APPEND and the supervisor cannot make it reopen a renamed file (the
 * descriptor is the child's, and llama-server has no reopen signal), so a
 * rotation is copy-then-truncate: the content is copied to `.1` and the log
 * truncated to 0, and the child's next write lands at the new end (offset 0)
 * because O_APPEND seeks to the end on every write. The price: a line the child
 * writes after the copy's last read and before the truncate is lost. The copy
 * reads until it finds no more and truncates right after, synchronously, so the
 * window is two system calls long. The truncation keeps the inode, so a
 * restarted child opening the same path again is fine.
 */
export class LogRotator {
  private readonly logs = new Set<string>();
  private readonly rotations = new Map<string, number>();
  /** The last failure said per log, so a lasting one is said once, not every check. */
  private readonly failures = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;

  constructor(
    readonly limits: LogRotationLimits,
    private readonly onError: (log: string, message: string) => void,
  ) {}

  watch(log: string): void {
    this.logs.add(log);
  }

  /** How many times `log` was emptied: a run whose log was rotated since it began owns all that is left in it. */
  rotationsOf(log: string): number {
    return this.rotations.get(log) ?? 0;
  }

  start(intervalMs = LOG_CHECK_INTERVAL_MS): void {
    this.timer ??= setInterval(() => void this.check(), intervalMs);
    // The children and the signal handlers keep `up` alive, not this.
    this.timer.unref();
  }

  /** Stops checking; resolves once a rotation under way (a compression) has finished. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.checking;
  }

  /** One look at every log, rotating those past the limit; a check still running is not started twice. */
  check(): Promise<void> {
    this.checking ??= (async () => {
      for (const log of this.logs) {
        try {
          await this.rotateIfOver(log);
          this.failures.delete(log);
        } catch (err) {
          const message = (err as Error).message;
          if (this.failures.get(log) !== message) this.onError(log, message);
          this.failures.set(log, message);
        }
      }
    })().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async rotateIfOver(log: string): Promise<void> {
    let size: number;
    try {
      size = statSync(log).size;
    } catch (err) {
      // Not created yet (a process still to start): nothing to rotate.
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    if (size <= this.limits.maxBytes) return;
    const dir = dirname(log);
    for (const step of planRotation(basename(log), size, readdirSync(dir), this.limits)) await this.run(dir, step);
  }

  private emptied(log: string): void {
    this.rotations.set(log, this.rotationsOf(log) + 1);
  }

  private async run(dir: string, step: RotationStep): Promise<void> {
    const at = (f: string) => join(dir, f);
    switch (step.op) {
      case "remove":
        return rmSync(at(step.file), { force: true });
      case "rename":
        return renameSync(at(step.from), at(step.to));
      case "copy-truncate":
        copyThenTruncate(at(step.from), at(step.to));
        return this.emptied(at(step.from));
      case "truncate":
        truncateSync(at(step.file), 0);
        return this.emptied(at(step.file));
      case "gzip":
        // A compression cut short (`up` killed) leaves the plain file beside a partial .gz: the next rotation
        // shifts both and compresses the plain one again over it.
        await pipeline(createReadStream(at(step.from)), createGzip(), createWriteStream(at(step.to)));
        return rmSync(at(step.from), { force: true });
    }
  }
}

/** Copies `from` to `to` up to where it ends as it is read (the child may still be writing), then empties it. */
function copyThenTruncate(from: string, to: string): void {
  const src = openSync(from, "r");
  let dst: number | undefined;
  try {
    dst = openSync(to, "w");
    const buf = Buffer.alloc(1024 * 1024);
    // A child writing faster than the copy reads would keep it going: stop at twice the size it started with.
    const stopAt = 2 * statSync(from).size + buf.length;
    for (let pos = 0; pos < stopAt; ) {
      const n = readSync(src, buf, 0, buf.length, pos);
      if (n === 0) break;
      writeSync(dst, buf, 0, n);
      pos += n;
    }
    truncateSync(from, 0);
  } finally {
    closeSync(src);
    if (dst !== undefined) closeSync(dst);
  }
}
