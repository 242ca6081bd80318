import type { WorkspaceScan } from "./workspace-scan.js";

/** How many late secrets a withheld result names; the rest are counted. */
const NAMED = 5;

/**
 * The secrets a run's masks did not cover: at its end there is a secret path
 * that was not masked at its start, or one whose file is not the one that was
 * masked (renamed or linked over the mask's name: the kernel detaches a mount
 * whose path is replaced, so the command then sees the new file). The masks
 * are mounts made when the command starts; a file someone else creates while
 * it runs has none, and the command could have read it. `visible` says which
 * paths the command could see at all (a rule's `paths` confine it).
 */
export function lateSecrets(before: WorkspaceScan, after: WorkspaceScan, visible: (p: string) => boolean): string[] {
  return after.hidden
    .filter((h) => before.hiddenIds.get(h.path) !== after.hiddenIds.get(h.path) && visible(h.path))
    .map((h) => h.path);
}

/** What the model gets instead of such a run's output: why, which files, and what to do. */
export function withheldNotice(late: readonly string[]): string {
  const named = late.slice(0, NAMED).join(", ");
  const more = late.length > NAMED ? ` and ${late.length - NAMED} more` : "";
  return `[output withheld: a secret file appeared in the workspace while the command ran (${named}${more}); the command could read it, so nothing it printed is shown. It is masked from the next command on: run the command again for its output]\n`;
}

/** The same when the walk after the run failed: whether a secret appeared cannot be known, so nothing is shown. */
export function uncheckedNotice(why: string): string {
  return `[output withheld: the workspace could not be walked after the command to see whether a secret file appeared while it ran (${why}); nothing it printed is shown]\n`;
}
