import { lstatSync, type Stats } from "node:fs";

/** Remembered at most: a workspace with more secret files than this forgets the oldest. */
const MAX_IDENTITIES = 100_000;

/** What identifies a file: its device and inode, and when that inode was made (0: the filesystem cannot say). */
export interface FileIdentity {
  dev: number;
  ino: number;
  birthtimeMs: number;
}

/**
 * Secrets by device and inode. Names are checked first (policy/glob.ts), but a
 * name is only what a file is called now: a file seen as a secret stays one
 * after `mv .aws awsx` or under a hard link's second name, so every file a tool
 * opens is checked here on its descriptor, after the open. Once a secret,
 * always one while brokerd runs: forgetting on a rename is the leak this exists
 * to stop. The inode's birth time is kept with it, because a rename or a link
 * keeps it but a new file does not: an unrelated file that reuses a deleted
 * secret's inode number is not refused as that secret (a filesystem with no
 * birth time falls back to device and inode alone: a refusal, never a leak).
 */
export class SecretIdentities {
  private readonly ids = new Map<string, number>();

  add(found: readonly FileIdentity[]): void {
    for (const f of found) {
      if (f.ino < 0) continue;
      const key = `${f.dev}:${f.ino}`;
      // Re-set, not skipped: a new secret on a reused inode replaces the old one's birth time.
      this.ids.delete(key);
      this.ids.set(key, f.birthtimeMs);
      if (this.ids.size > MAX_IDENTITIES) this.ids.delete(this.ids.keys().next().value as string);
    }
  }

  has(st: Pick<Stats, "dev" | "ino" | "birthtimeMs">): boolean {
    const key = `${st.dev}:${st.ino}`;
    const birth = this.ids.get(key);
    if (birth === undefined) return false;
    if (birth && st.birthtimeMs && birth !== st.birthtimeMs) {
      // The secret is gone and its inode number was given to another file.
      this.ids.delete(key);
      return false;
    }
    return true;
  }

  get size(): number {
    return this.ids.size;
  }
}

/** A path's identity now, without following a symlink; ino -1 when there is nothing there. */
export function identityOf(abs: string): FileIdentity {
  try {
    const st = lstatSync(abs);
    return { dev: st.dev, ino: st.ino, birthtimeMs: st.birthtimeMs };
  } catch {
    return { dev: -1, ino: -1, birthtimeMs: 0 };
  }
}
