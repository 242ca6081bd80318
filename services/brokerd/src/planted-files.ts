import { cpSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join, relative } from "node:path";

/**
 * Moves what a sandboxed run planted at a protected path (a `.git` file
 * pointing at a config of its own, a `.vscode/tasks.json`, a hook) out of the
 * workspace, into brokerd's state directory, before any program outside the
 * sandbox can obey it. Kept, not deleted: it is evidence, and a person may want
 * it. Returns a line per path for the tool result and the audit trail.
 */
export function quarantinePlanted(
  planted: readonly string[],
  roots: readonly string[],
  stateDir: string,
  callId: string,
): string[] {
  if (planted.length === 0) return [];
  const dest = join(stateDir, "quarantine", "planted", `${Date.now()}-${callId.replace(/[^\w.-]/g, "_").slice(0, 80)}`);
  mkdirSync(dest, { recursive: true, mode: 0o700 });
  const notes: string[] = [];
  for (const p of planted) {
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
    notes.push(`${rel}: removed, a protected path the command created (kept in ${to})`);
  }
  return notes;
}
