import { mkdirSync, readFileSync, readdirSync, renameSync, statSync, unlinkSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { atomicWrite } from "@boxmaker/common";
import { BLOB_HASH, BLOB_PREFIX, sha256 } from "./blob-hash.js";
import { BlobPinOverCap, BlobPins } from "./blob-pins.js";
import { ToolError } from "./errors.js";

// The hash and the pins are their own modules; the store's users and tests import them from here.
export { BLOB_PREFIX, BlobPinOverCap, sha256 };

export interface BlobStoreOptions {
  /** Above this many bytes the least recently used unpinned blobs are evicted; 0 = no cap. */
  capBytes?: number;
  now?: () => number;
}

export interface BlobStat {
  blobs: number;
  bytes: number;
  capBytes: number;
  pinned: number;
  /** Bytes of the stored blobs pinned; never above capBytes (see BlobStore). */
  pinnedBytes: number;
  evicted: number;
  evictedBytes: number;
}

interface Entry {
  bytes: number;
  used: number;
}

/**
 * Content-addressed store: a text is kept whole, once, under its sha256.
 * Bounded: above `capBytes` the least recently used blobs go, except those a
 * live session's current epoch pins (loopd tells brokerd which) and the one
 * just stored. Every operation is synchronous in brokerd's one thread, so an
 * eviction can never interleave with a pin or a put.
 *
 * Pinned blobs count against the cap, and the pinned bytes can never exceed
 * it: a pin that would take them over is refused (BlobPinOverCap), and a
 * blob stored after being pinned, whose bytes would take them over, is stored
 * unpinned. Eviction cannot free a pinned blob, so if pins could exceed the
 * cap, sessions pinning their epochs would grow the store without bound past
 * the disk budget the operator set; evicting pinned blobs instead would break
 * a live session's reads without telling anyone. A refusal is visible (loopd
 * logs it), and the blob stays readable until ordinary eviction reaches it,
 * when get() names the cap. So the store holds at most capBytes plus the one
 * blob just stored.
 */
export class BlobStore {
  private readonly index = new Map<string, Entry>();
  private total = 0;
  private readonly pins: BlobPins;
  private evicted = 0;
  private evictedBytes = 0;
  readonly capBytes: number;
  private readonly now: () => number;

  constructor(
    readonly dir: string,
    opts: BlobStoreOptions = {},
  ) {
    this.capBytes = opts.capBytes ?? 0;
    this.now = opts.now ?? Date.now;
    mkdirSync(dir, { recursive: true, mode: 0o750 });
    this.scan();
    this.pins = new BlobPins(join(dir, "pins.json"));
  }

  private pathOf(hash: string): string {
    return join(this.dir, hash.slice(0, 2), hash);
  }

  /** The index is the directory: sizes and last use (mtime, touched on every read) of every stored blob. */
  private scan(): void {
    for (const sub of readdirSync(this.dir)) {
      if (!/^[0-9a-f]{2}$/.test(sub)) continue;
      for (const f of readdirSync(join(this.dir, sub))) {
        const p = join(this.dir, sub, f);
        if (f.endsWith(".tmp")) {
          try {
            unlinkSync(p); // a put that died before its rename
          } catch {
            // gone already
          }
          continue;
        }
        if (!BLOB_HASH.test(f)) continue;
        try {
          const st = statSync(p);
          this.index.set(f, { bytes: st.size, used: st.mtimeMs });
          this.total += st.size;
        } catch {
          // vanished while scanning
        }
      }
    }
  }

  has(hash: string): boolean {
    return this.index.has(hash);
  }

  put(text: string): string {
    return this.putEx(text).hash;
  }

  putEx(text: string): { hash: string; bytes: number; existed: boolean } {
    const hash = sha256(text);
    const p = this.pathOf(hash);
    const bytes = Buffer.byteLength(text);
    const existed = this.index.has(hash);
    if (existed) {
      this.touch(hash);
    } else {
      if (this.capBytes && this.pins.owners(hash).length && this.pinnedBytes() + bytes > this.capBytes)
        this.pins.release(hash);
      mkdirSync(join(this.dir, hash.slice(0, 2)), { recursive: true, mode: 0o750 });
      atomicWrite(p, text);
      this.index.set(hash, { bytes, used: this.now() });
      this.total += bytes;
    }
    this.evict(hash);
    return { hash, bytes, existed };
  }

  private touch(hash: string): void {
    const e = this.index.get(hash);
    if (!e) return;
    e.used = this.now();
    try {
      const t = new Date(e.used);
      utimesSync(this.pathOf(hash), t, t);
    } catch {
      // the order survives in memory until a restart
    }
  }

  /** Bytes of the stored blobs some owner pins, with `owner`'s pins replaced by `instead` when given. */
  private pinnedBytes(owner?: string, instead?: ReadonlySet<string>): number {
    let n = 0;
    for (const h of this.pins.hashes(owner, instead)) n += this.index.get(h)?.bytes ?? 0;
    return n;
  }

  /** Least recently used first, never a pinned blob nor `keep`, until the store is under its cap. */
  private evict(keep: string): void {
    if (!this.capBytes || this.total <= this.capBytes) return;
    const pinned = this.pins.hashes();
    const victims = [...this.index].filter(([h]) => h !== keep && !pinned.has(h)).sort((a, b) => a[1].used - b[1].used);
    for (const [h, e] of victims) {
      if (this.total <= this.capBytes) break;
      try {
        unlinkSync(this.pathOf(h));
      } catch {
        // already gone: drop it from the index all the same
      }
      this.index.delete(h);
      this.total -= e.bytes;
      this.evicted++;
      this.evictedBytes += e.bytes;
    }
  }

  /**
   * Replaces what `owner` pins; an empty list releases it. Returns how many of
   * the hashes are not stored. Throws BlobPinOverCap, changing nothing, when
   * the new set would take the pinned bytes over the cap.
   */
  pin(owner: string, refs: readonly string[]): { pinned: number; missing: number } {
    const hashes = new Set(
      refs.map((r) => (r.startsWith(BLOB_PREFIX) ? r.slice(BLOB_PREFIX.length) : r)).filter((h) => BLOB_HASH.test(h)),
    );
    if (this.capBytes && hashes.size) {
      const would = this.pinnedBytes(owner, hashes);
      // Only a pin that adds bytes is refused: one that shrinks an over-cap set
      // (pins.json from before this check, say) is how it gets back under.
      if (would > this.capBytes && would > this.pinnedBytes()) throw new BlobPinOverCap(owner, would, this.capBytes);
    }
    this.pins.replace(owner, hashes);
    return { pinned: hashes.size, missing: [...hashes].filter((h) => !this.index.has(h)).length };
  }

  /** Deletes every stored blob not in `keep` (the checkpoints' content once their changes are gone); returns how many. */
  removeUnless(keep: ReadonlySet<string>): number {
    let n = 0;
    for (const [h, e] of [...this.index]) {
      if (keep.has(h)) continue;
      try {
        unlinkSync(this.pathOf(h));
      } catch {
        // already gone: drop it from the index all the same
      }
      this.index.delete(h);
      this.total -= e.bytes;
      n++;
    }
    return n;
  }

  stat(): BlobStat {
    return {
      blobs: this.index.size,
      bytes: this.total,
      capBytes: this.capBytes,
      pinned: [...this.pins.hashes()].filter((h) => this.index.has(h)).length,
      pinnedBytes: this.pinnedBytes(),
      evicted: this.evicted,
      evictedBytes: this.evictedBytes,
    };
  }

  /** Accepts `blob:sha256:<hex>` or the bare hex; anything else is the model's mistake. */
  static parseRef(ref: string): string {
    const hex = ref.trim().startsWith(BLOB_PREFIX) ? ref.trim().slice(BLOB_PREFIX.length) : ref.trim();
    if (!BLOB_HASH.test(hex))
      throw new ToolError(`"${ref}" is not a blob reference; it looks like ${BLOB_PREFIX}<64 hex digits>`);
    return hex;
  }

  get(ref: string): string {
    const hash = BlobStore.parseRef(ref);
    let text: string;
    try {
      text = readFileSync(this.pathOf(hash), "utf8");
    } catch {
      const cap = this.capBytes
        ? ` (the store keeps at most ${Math.round(this.capBytes / 1048576)} MiB and evicts the least recently used)`
        : "";
      throw new ToolError(
        `no blob ${BLOB_PREFIX}${hash} is stored: it was evicted from the blob store${cap}, or never stored. ` +
          `Its excerpt in the conversation is all that is left; re-run the command or re-read the file to get the whole text again.`,
      );
    }
    if (sha256(text) !== hash) {
      // A damaged blob is moved aside, never served as the text it claims to be.
      const e = this.index.get(hash);
      if (e) this.total -= e.bytes;
      this.index.delete(hash);
      try {
        mkdirSync(join(this.dir, "quarantine"), { recursive: true, mode: 0o750 });
        renameSync(this.pathOf(hash), join(this.dir, "quarantine", `${hash}.${Date.now()}`));
      } catch {
        // left in place; the hash check refuses it again
      }
      throw new ToolError(
        `the stored blob ${BLOB_PREFIX}${hash} is damaged (its content no longer matches its hash) and was set aside; re-run the command or re-read the file`,
      );
    }
    if (!this.index.has(hash)) {
      this.index.set(hash, { bytes: Buffer.byteLength(text), used: this.now() });
      this.total += Buffer.byteLength(text);
    }
    this.touch(hash);
    return text;
  }
}
