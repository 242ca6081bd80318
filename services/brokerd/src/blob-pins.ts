import { readFileSync } from "node:fs";
import { BoxmakerError, Status, atomicWrite } from "@boxmaker/common";
import { BLOB_HASH } from "./blob-hash.js";

/** A pin refused because the blobs pinned would hold more than the store's cap. */
export class BlobPinOverCap extends BoxmakerError {
  constructor(owner: string, wouldPin: number, capBytes: number) {
    super(
      "BLOB_PIN_OVER_CAP",
      `pinning these blobs for ${owner.slice(0, 200)} would keep ${wouldPin} bytes pinned, more than the blob store's cap of ${capBytes} bytes (blob_cap_bytes); ` +
        `the pin was refused and ${owner.slice(0, 200)}'s earlier pins stand: raise blob_cap_bytes, or archive sessions to release theirs`,
      { status: Status.RESOURCE_EXHAUSTED },
    );
  }
}

/**
 * Which blobs each owner (a live session's current epoch) pins, kept in one
 * file (pins.json) beside the blobs so a restart of brokerd keeps them. What
 * a pin may cost is the store's to judge (BlobStore.pin); this only records.
 */
export class BlobPins {
  private readonly byOwner = new Map<string, Set<string>>();

  constructor(private readonly file: string) {
    try {
      const raw = JSON.parse(readFileSync(file, "utf8")) as Record<string, string[]>;
      for (const [owner, hashes] of Object.entries(raw))
        this.byOwner.set(owner, new Set(hashes.filter((h) => BLOB_HASH.test(h))));
    } catch {
      // none yet, or unreadable: loopd pins a session again when its set changes and after loopd restarts
    }
  }

  private save(): void {
    const obj: Record<string, string[]> = {};
    for (const [owner, set] of this.byOwner) if (set.size) obj[owner] = [...set].sort();
    atomicWrite(this.file, JSON.stringify(obj));
  }

  /** Every hash some owner pins, with `owner`'s pins replaced by `instead` when given. */
  hashes(owner?: string, instead?: ReadonlySet<string>): Set<string> {
    const all = new Set<string>();
    for (const [o, set] of this.byOwner) if (o !== owner || !instead) for (const h of set) all.add(h);
    if (instead) for (const h of instead) all.add(h);
    return all;
  }

  /** The owners that pin `hash`. */
  owners(hash: string): string[] {
    return [...this.byOwner].filter(([, set]) => set.has(hash)).map(([owner]) => owner);
  }

  /** Drops `hash` from every owner's pins. */
  release(hash: string): void {
    for (const owner of this.owners(hash)) this.byOwner.get(owner)?.delete(hash);
    this.save();
  }

  /** Replaces what `owner` pins; an empty set releases it. Written out only when it changed. */
  replace(owner: string, hashes: Set<string>): void {
    const before = this.byOwner.get(owner);
    const same = before && before.size === hashes.size && [...hashes].every((h) => before.has(h));
    if (hashes.size) this.byOwner.set(owner, hashes);
    else this.byOwner.delete(owner);
    if (!same && (hashes.size || before)) this.save();
  }
}
