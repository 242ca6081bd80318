import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { resolve, sep } from "node:path";
import { ConfigError } from "@boxmaker/common";
import type { BrokerConfig } from "./config-types.js";
import { canonicalize } from "./policy/canonical-path.js";

const within = (root: string, p: string) => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);

/** Every home directory on the machine (passwd), and brokerd's own and $HOME. */
function homes(): string[] {
  const out = new Set<string>([homedir()]);
  if (process.env.HOME) out.add(process.env.HOME);
  try {
    for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
      const dir = line.split(":")[5];
      // Service accounts' "homes" (/, /nonexistent, /var/lib/…) are not a person's dotfiles.
      if (dir && /^\/(home|root|Users)(\/|$)/.test(dir)) out.add(dir);
    }
  } catch {
    /* no passwd: the two above still count */
  }
  return [...out].filter((h) => h !== "/").map((h) => canonicalize(resolve(h)));
}

/**
 * A workspace root at or above a home directory puts the person's shell
 * start-up files, git config, autostart entries and ~/.local/bin in the
 * model's writable tree: the protected paths hold them, but a home is not a
 * project, and one missed name there runs at the next login. Refused unless
 * the operator sets `allow_home_workspace`. One line, exit 2.
 */
export function checkHomeWorkspace(config: BrokerConfig): void {
  if (config.allow_home_workspace) return;
  const hs = homes();
  for (const r of config.workspace_roots) {
    const root = canonicalize(resolve(r));
    const home = hs.find((h) => within(root, h));
    if (home)
      throw new ConfigError(
        `key "workspace_roots": ${r} ${root === home ? "is" : "contains"} the home directory ${home}; use a project directory, or set "allow_home_workspace": true to allow it`,
      );
  }
}
