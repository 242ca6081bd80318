import { statSync } from "node:fs";
import { dirname, resolve, sep } from "node:path";
import { checkSocketPath, ConfigError } from "@boxmaker/common";
import type { BrokerConfig } from "./config-types.js";
import { canonicalize } from "./policy/paths.js";

const within = (root: string, p: string) => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);

/**
 * The stack must be out of the tools' reach: brokerd refuses to start when its
 * socket (the runtime directory every daemon's socket shares) or its state
 * directory lies inside a workspace root, since the sandbox binds the roots
 * writable and a command could then talk to the daemons (approve its own
 * staged writes) or edit proposals and the audit trail. One line, exit 2.
 */
export function checkBoundary(config: BrokerConfig): void {
  checkSocketPath(config.socket);
  for (const r of config.workspace_roots) {
    const st = statSync(r, { throwIfNoEntry: false });
    if (!st?.isDirectory())
      throw new ConfigError(
        `key "workspace_roots": ${r} ${st ? "is not a directory" : "does not exist"}; create it or remove it from the list`,
      );
  }
  const roots = config.workspace_roots.map((r) => canonicalize(resolve(r)));
  const mine: Array<[string, string]> = [
    ["socket", dirname(resolve(config.socket))],
    ["state_dir", resolve(config.state_dir)],
  ];
  // A read-only bind still lets a process connect() to a socket: no sandbox path may expose them.
  const sockDir = canonicalize(dirname(resolve(config.socket)));
  for (const ro of config.sandbox.ro_paths) {
    const canon = canonicalize(resolve(ro));
    if (within(canon, sockDir)) {
      throw new ConfigError(
        `key "sandbox.ro_paths": ${ro} contains brokerd's socket directory ${sockDir}; commands could connect to the daemons. Remove it or move the sockets`,
      );
    }
  }
  for (const [key, p] of mine) {
    const canon = canonicalize(p);
    for (const root of roots) {
      if (within(root, canon)) {
        throw new ConfigError(
          `key "${key}": ${p} lies inside the workspace root ${root}; tools and commands could reach brokerd's own ${key === "socket" ? "sockets" : "state"}. Put it outside every workspace root`,
        );
      }
    }
  }
}
