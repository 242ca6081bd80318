import type { Stats } from "node:fs";

/** Remembered at most: a workspace with more secret files than this forgets the oldest. */
const MAX_IDENTITIES = 100_000;

/**
 * Secrets by device and inode. Names are checked first (policy/glob.ts), but a
 * name is only what a file is called now: a file seen as a secret stays one
 * after `mv .aws awsx` or under a hard link's second name, so every file a tool
 * opens is checked here on its descriptor, after the open. Once a secret,
 * always one while brokerd runs: forgetting on a rename is the leak this exists
 * to stop (an inode number reused by a new file costs a refusal, not a leak).
 */
export class SecretIdentities {
  private readonly ids = new Set<string>();

  add(found: readonly { dev: number; ino: number }[]): void {
    for (const f of found) {
      if (f.ino < 0) continue;
      const key = `${f.dev}:${f.ino}`;
      if (this.ids.has(key)) continue;
      this.ids.add(key);
      if (this.ids.size > MAX_IDENTITIES) this.ids.delete(this.ids.values().next().value as string);
    }
  }

  has(st: Pick<Stats, "dev" | "ino">): boolean {
    return this.ids.has(`${st.dev}:${st.ino}`);
  }

  get size(): number {
    return this.ids.size;
  }
}
