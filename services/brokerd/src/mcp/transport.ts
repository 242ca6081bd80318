import { existsSync, realpathSync, statSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Logger } from "@boxmaker/common";
import type { McpServerConfig } from "../config-types.js";
import { McpNoSandbox } from "../errors.js";
import { CLEAN_ENV, type Sandbox } from "../sandbox.js";

/**
 * What a stdio server's own program needs to read in the sandbox: the
 * directory of each absolute path on its command line (node's bin dir, the
 * script's dir) and every node_modules up the tree (its dependencies).
 */
export function programPaths(argv: readonly string[]): string[] {
  const out = new Set<string>();
  for (const a of argv) {
    if (!isAbsolute(a) || !existsSync(a)) continue;
    let real: string;
    try {
      real = realpathSync(a);
    } catch {
      continue;
    }
    const dir = statSync(real).isDirectory() ? real : dirname(real);
    out.add(dir);
    // Node resolves packages through every node_modules up the tree.
    for (let d = dir; dirname(d) !== d; d = dirname(d)) {
      if (existsSync(join(d, "node_modules"))) out.add(join(d, "node_modules"));
    }
  }
  return [...out];
}

/** Where and how a server runs, shared by every server of one broker. */
export interface McpRuntime {
  sandbox?: Sandbox;
  /** The workspace roots: a sandboxed server's cwd is the first. */
  roots: string[];
}

/** The stdio command line, wrapped in bwrap unless the server opts out. */
function stdioSpawn(
  c: McpServerConfig,
  runtime: McpRuntime,
): { command: string; args: string[]; env: Record<string, string>; cwd?: string } {
  const sb = runtime.sandbox;
  if (!c.sandbox || sb?.state === "unsandboxed") {
    return {
      command: c.command!,
      args: c.args,
      env: { ...getDefaultEnvironment(), ...c.env },
      ...(c.cwd ? { cwd: c.cwd } : {}),
    };
  }
  if (sb?.state !== "bwrap") {
    throw new McpNoSandbox(sb?.detail ?? "none configured");
  }
  const cwd = c.cwd ?? runtime.roots[0] ?? "/";
  const argv = [c.command!, ...c.args];
  const wrapped = sb.wrap({
    argv,
    cwd,
    ro: [...programPaths(argv), ...c.ro_paths],
    rw: c.rw_paths,
    network: c.hosts.length > 0,
  });
  const binDir = isAbsolute(c.command!) ? `${dirname(c.command!)}:` : "";
  return {
    command: wrapped.command,
    args: wrapped.args,
    env: { ...CLEAN_ENV, PATH: `${binDir}${CLEAN_ENV.PATH}`, ...c.env },
    cwd,
  };
}

/** A fresh transport to server `name`: a (sandboxed) child process, or streamable HTTP. */
export function openTransport(name: string, c: McpServerConfig, runtime: McpRuntime, log: Logger): Transport {
  if (c.transport === "stdio") {
    const t = new StdioClientTransport({ ...stdioSpawn(c, runtime), stderr: "pipe" });
    // Drained so a chatty server cannot block on a full pipe; kept for diagnosis.
    t.stderr?.on("data", (d: Buffer) => log.debug({ mcp: name, stderr: d.toString().trimEnd() }, "mcp stderr"));
    return t;
  }
  return new StreamableHTTPClientTransport(new URL(c.url!), { requestInit: { headers: c.headers } });
}
