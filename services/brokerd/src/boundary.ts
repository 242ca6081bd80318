import { statSync } from "node:fs";
import { dirname, resolve, sep } from "node:path";
import { checkSocketPath, ConfigError } from "@boxmaker/common";
import type { BrokerConfig } from "./config-types.js";
import { canonicalize } from "./policy/canonical-path.js";

const within = (root: string, p: string) => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);

/** A directory of the stack's own that no sandbox may bind, canonical. */
export interface StackDir {
  what: string;
  path: string;
}

/** The runtime directory every daemon's socket shares, and brokerd's state. */
export function stackDirs(config: Pick<BrokerConfig, "socket" | "state_dir">): StackDir[] {
  return [
    { what: "brokerd's socket directory", path: canonicalize(dirname(resolve(config.socket))) },
    { what: "brokerd's state directory", path: canonicalize(resolve(config.state_dir)) },
  ];
}

/**
 * Why binding `p` into a sandbox would hand it the stack, or undefined: a bind
 * that contains a stack directory exposes it (a read-only bind still allows
 * `connect()` to a socket), and so does one inside it.
 */
export function bindExposes(p: string, stack: readonly StackDir[]): string | undefined {
  let canon: string;
  try {
    canon = canonicalize(resolve(p));
  } catch {
    // A dangling symlink is bound as a symlink or not at all: its target is not in the sandbox.
    return undefined;
  }
  for (const s of stack) {
    if (within(canon, s.path)) return `${p} contains ${s.what} ${s.path}`;
    if (within(s.path, canon)) return `${p} lies inside ${s.what} ${s.path}`;
  }
  return undefined;
}

/**
 * The stack must be out of the tools' reach: brokerd refuses to start when its
 * socket (the runtime directory every daemon's socket shares) or its state
 * directory lies inside a workspace root, since the sandbox binds the roots
 * writable and a command could then talk to the daemons (approve its own
 * staged writes) or edit proposals and the audit trail; likewise when a
 * configured bind (`sandbox.ro_paths`, a sandboxed MCP server's `ro_paths` and
 * `rw_paths`) contains either. One line, exit 2. The binds brokerd computes
 * for an MCP server's program are checked when it starts that server.
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
  const stack = stackDirs(config);
  for (const ro of config.sandbox.ro_paths) {
    const why = bindExposes(ro, stack);
    if (why)
      throw new ConfigError(
        `key "sandbox.ro_paths": ${why}; commands could connect to the daemons or read brokerd's state. Remove it or move the sockets and state`,
      );
  }
  for (const [name, c] of Object.entries(config.mcp_servers)) {
    if (c.transport !== "stdio" || !c.sandbox) continue;
    for (const key of ["ro_paths", "rw_paths"] as const) {
      for (const p of c[key]) {
        const why = bindExposes(p, stack);
        if (why)
          throw new ConfigError(
            `key "mcp_servers.${name}.${key}": ${why}; the server could connect to the daemons (approve its own staged writes) or edit brokerd's state. Remove it or move the sockets and state`,
          );
      }
    }
  }
  const mine: Array<[string, string]> = [
    ["socket", dirname(resolve(config.socket))],
    ["state_dir", resolve(config.state_dir)],
  ];
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
