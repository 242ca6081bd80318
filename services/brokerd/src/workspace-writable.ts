import { accessSync, constants } from "node:fs";

/**
 * What to tell the operator about a workspace root brokerd cannot write: the
 * approved writes (and commands) there would fail one by one with EROFS or
 * EACCES from deep inside a temp-file path, long after start-up. Under
 * systemd the usual cause is ProtectSystem=strict without the root in
 * ReadWritePaths=; otherwise Unix permissions for brokerd's account.
 */
export function unwritableRoots(roots: readonly string[]): { root: string; code: string; fix: string }[] {
  const out: { root: string; code: string; fix: string }[] = [];
  for (const root of roots) {
    try {
      accessSync(root, constants.W_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "EACCES";
      out.push({ root, code, fix: fixFor(root, code) });
    }
  }
  return out;
}

export function fixFor(root: string, code: string): string {
  if (code === "EROFS")
    return `it is read-only for brokerd (under systemd: add it with \`systemctl edit boxmaker-brokerd\`, [Service] ReadWritePaths=${root}; NixOS: list it in services.boxmaker.workspaceRoots)`;
  return `brokerd's account (uid ${process.getuid?.() ?? "?"}) may not write it (${code}): give that account write permission (e.g. the group boxmaker with g+w), or run brokerd as the workspace's owner (docs/operations.md, "Which account tools act as")`;
}
