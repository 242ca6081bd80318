/**
 * What `sandbox: none` exposes, in the one line brokerd logs at start: a command
 * then runs as brokerd's own user, unconfined, and its parent's environment is
 * readable to it (/proc/<pid>/environ is the environment brokerd was started
 * with, whatever brokerd later deletes from process.env). Names only, never values.
 */
export function unsandboxedWarning(pid: number, env: NodeJS.ProcessEnv): string {
  const names = Object.keys(env).sort();
  const shown = names.slice(0, 12).join(", ") + (names.length > 12 ? `, and ${names.length - 12} more` : "");
  return (
    "run_command is not sandboxed: commands run as brokerd's user and can read and write every file it can, " +
    `and its environment through /proc/${pid}/environ (${names.length} variables${names.length ? `: ${shown}` : ""}); ` +
    "start brokerd with no secret in its environment, or install bubblewrap"
  );
}
