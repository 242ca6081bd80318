import { cpSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import type { Planted } from "./policy/paths.js";

/**
 * Moves what a sandboxed run planted at a protected path (a `.git` file
 * pointing at a config of its own, a `.vscode/tasks.json`, a hook) out of the
 * workspace, into brokerd's state directory, before any program outside the
 * sandbox can obey it. Kept, not deleted: it is evidence, and a person may want
 * it. Returns a line per path for the tool result and the audit trail.
 */
export function quarantinePlanted(
  planted: readonly Planted[],
  roots: readonly string[],
  stateDir: string,
  callId: string,
): string[] {
  if (planted.length === 0) return [];
  const dest = join(stateDir, "quarantine", "planted", `${Date.now()}-${callId.replace(/[^\w.-]/g, "_").slice(0, 80)}`);
  mkdirSync(dest, { recursive: true, mode: 0o700 });
  const notes: string[] = [];
  for (const { path: p, gitShaped } of planted) {
    const root = roots.find((r) => !relative(r, p).startsWith("..")) ?? roots[0] ?? "/";
    const rel = relative(root, p);
    const to = join(dest, `${roots.indexOf(root)}`, rel);
    mkdirSync(join(to, ".."), { recursive: true, mode: 0o700 });
    try {
      renameSync(p, to);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EXDEV") {
        notes.push(`${rel}: a protected path the command created could not be removed (${(err as Error).message})`);
        continue;
      }
      cpSync(p, to, { recursive: true, verbatimSymlinks: true });
      rmSync(p, { recursive: true, force: true });
    }
    const why = gitShaped
      ? `it gave ${relative(root, gitShaped)}/ git's shape (HEAD, objects/, refs/), a repository git would run hooks from`
      : "a protected path the command created";
    notes.push(`${rel}: removed, ${why} (kept in ${to})`);
  }
  return notes;
}
