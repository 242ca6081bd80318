import { lstat, readdir, unlink, utimes } from "node:fs/promises";
import { join } from "node:path";
import { failedPrecondition, invalidArgument, messageOf, type Logger } from "@boxmaker/common";

/**
 * The files Boxmaker asks llama-server to save: `boxmaker-<session id>.bin`
 * (loopd's parking names them). Nothing else in the directory is ever listed,
 * counted against the cap or erased: it may be the operator's.
 */
const OWN_SLOT_FILE = /^boxmaker-[A-Za-z0-9._-]+\.bin$/;

interface SlotFileEntry {
  filename: string;
  bytes: number;
  /** Last saved or restored, from the file's mtime (set on restore by `touch`). */
  usedMs: number;
}

export interface SlotFilesListing {
  managed: boolean;
  dir: string;
  unmanagedReason: string;
  files: SlotFileEntry[];
  totalBytes: number;
  capBytes: number;
}

/**
 * Boxmaker's parked slot caches in llama-server's --slot-save-path. The
 * server writes them (save) and reads them (restore) but has no way to delete
 * one, so their upkeep is here: erasing what loopd says no session needs, and
 * a size cap that erases the least recently used files after each save. Used
 * means saved or restored: the server does not touch a file it restores, so
 * `touch` sets its mtime, which is the only record of use (access times are
 * not kept on most mounts). Correctness never depends on a file being here:
 * a restore that finds none costs a re-read.
 */
export class SlotFiles {
  /** One upkeep at a time: two saves enforcing the cap at once would each count the other's file. */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    /** "" when the directory is not reachable from here (llama-server elsewhere). */
    private readonly dir: string,
    private readonly capBytes: number,
    private readonly log: Logger,
  ) {}

  get managed(): boolean {
    return this.dir !== "";
  }

  /** Erases the named files (Boxmaker's own only; a name already gone is fine), then lists what is left. */
  async erase(names: readonly string[]): Promise<SlotFilesListing & { erased: number }> {
    for (const n of names) checkOwnName(n);
    return this.serial(async () => {
      this.requireManaged();
      let erased = 0;
      for (const n of new Set(names)) if (await this.unlinkOwn(n)) erased++;
      if (erased) this.log.info({ erased, files: names.length }, "erased parked slot files");
      return { ...(await this.listing()), erased };
    });
  }

  /** What is there now; an unmanaged or unreadable directory lists nothing and says why. */
  list(): Promise<SlotFilesListing> {
    return this.serial(() => this.listing());
  }

  /**
   * After a save of `saved`: erases the least recently used files until the
   * total is within the cap, the file just saved last of all (alone over the
   * cap, it goes too: the cap is a bound on the disk, not a hint). Returns
   * the names erased.
   */
  afterSave(saved: string): Promise<string[]> {
    if (!this.managed || !OWN_SLOT_FILE.test(saved)) return Promise.resolve([]);
    return this.serial(async () => {
      const l = await this.listing();
      if (!l.managed || l.totalBytes <= this.capBytes) return [];
      const order = [...l.files].sort((a, b) => rank(a, saved) - rank(b, saved) || a.usedMs - b.usedMs);
      let total = l.totalBytes;
      const evicted: string[] = [];
      for (const f of order) {
        if (total <= this.capBytes) break;
        if (await this.unlinkOwn(f.filename)) evicted.push(f.filename);
        total -= f.bytes;
      }
      this.log.info(
        { evicted, cap_bytes: this.capBytes, total_bytes: total },
        "slot-save directory over its cap: erased the least recently used parked caches",
      );
      return evicted;
    });
  }

  /** Marks `name` used now (after a restore), so the cap erases it after files used longer ago. */
  async touch(name: string): Promise<void> {
    if (!this.managed || !OWN_SLOT_FILE.test(name)) return;
    const now = new Date();
    await utimes(join(this.dir, name), now, now).catch((err: unknown) =>
      this.log.debug({ file: name, err: messageOf(err) }, "could not mark slot file used"),
    );
  }

  private requireManaged(): void {
    if (!this.managed) {
      throw failedPrecondition(
        "inferproxy manages no slot-save directory (slot_files.dir is empty): erase parked files where llama-server runs",
      );
    }
  }

  private async listing(): Promise<SlotFilesListing> {
    const base = { dir: this.dir, capBytes: this.capBytes, files: [] as SlotFileEntry[], totalBytes: 0 };
    if (!this.managed) return { ...base, managed: false, unmanagedReason: "slot_files.dir is not set" };
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      return { ...base, managed: false, unmanagedReason: `cannot read ${this.dir}: ${messageOf(err)}` };
    }
    for (const filename of names.filter((n) => OWN_SLOT_FILE.test(n)).sort()) {
      // lstat: a symlink planted under our name is listed by its own size and never followed.
      const st = await lstat(join(this.dir, filename)).catch(() => undefined);
      if (!st?.isFile()) continue;
      base.files.push({ filename, bytes: st.size, usedMs: Math.round(st.mtimeMs) });
      base.totalBytes += st.size;
    }
    return { ...base, managed: true, unmanagedReason: "" };
  }

  private async unlinkOwn(name: string): Promise<boolean> {
    try {
      await unlink(join(this.dir, name));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
      this.log.warn({ file: name, err: messageOf(err) }, "could not erase parked slot file");
      return false;
    }
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }
}

/** The file just saved sorts after every other: it is the most recently used. */
const rank = (f: SlotFileEntry, saved: string) => (f.filename === saved ? 1 : 0);

function checkOwnName(name: string): void {
  if (!OWN_SLOT_FILE.test(name)) {
    throw invalidArgument(
      `only Boxmaker's own slot files (boxmaker-<id>.bin) can be erased, not ${JSON.stringify(name.slice(0, 200))}`,
      { field: "erase" },
    );
  }
}
