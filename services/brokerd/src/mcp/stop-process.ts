const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** SIGTERM, then SIGKILL after `graceMs`: a server that ignores SIGTERM does not outlive brokerd. */
export async function stopProcess(pid: number, graceMs = 1000): Promise<void> {
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  const until = Date.now() + graceMs;
  while (Date.now() < until && alive(pid)) await new Promise((r) => setTimeout(r, 25));
  if (alive(pid)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }
}
