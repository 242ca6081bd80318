import type { ElicitationDesk } from "./elicitation-desk.js";
import { dirname, isAbsolute } from "node:path";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Logger } from "@boxmaker/common";
import type { McpServerConfig } from "../config-types.js";
import { bindExposes, type StackDir } from "../boundary.js";
import { McpNoSandbox, Refused } from "../errors.js";
import { PathMatcher } from "../policy/glob.js";
import { CLEAN_ENV } from "../clean-env.js";
import type { Sandbox } from "../sandbox.js";
import { programPaths } from "./program-paths.js";

/** Where and how a server runs, shared by every server of one broker. */
export interface McpRuntime {
  sandbox?: Sandbox;
  /** The workspace roots: a sandboxed server's cwd is the first. */
  roots: string[];
  /** The directories no server's sandbox may bind (the runtime and state directories). */
  stack?: readonly StackDir[];
  /** The secret patterns: a program directory holding one is not bound whole. */
  secretPatterns?: readonly string[];
  /** Where a server's questions for the person wait (elicitation); without it servers are told Boxmaker asks nothing. */
  questions?: ElicitationDesk;
  /** Where OAuth-protected servers' credentials are kept (brokerd's state_dir/mcp-oauth). */
  oauthDir?: string;
}

/** Every extra bind of a sandboxed server, refused as a whole when one would expose the stack. */
function serverBinds(c: McpServerConfig, runtime: McpRuntime, argv: string[]): { ro: string[]; rw: string[] } {
  const stack = runtime.stack ?? [];
  const secrets = new PathMatcher(runtime.secretPatterns ?? [], { ignoreCase: true });
  const exposes = (p: string) => bindExposes(p, stack);
  const ro = [...programPaths(argv, { exposes, isSecret: (rel, abs) => secrets.matches(rel, abs) }), ...c.ro_paths];
  for (const p of [...ro, ...c.rw_paths]) {
    const why = exposes(p);
    if (why)
      throw new Refused(
        "sandbox:exposes-stack",
        `refused to start it: its sandbox would bind ${why}, where it could connect to the daemons or edit brokerd's state`,
      );
  }
  return { ro, rw: c.rw_paths };
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
  const wrapped = sb.wrap({ argv, cwd, ...serverBinds(c, runtime, argv), network: c.hosts.length > 0 });
  const binDir = isAbsolute(c.command!) ? `${dirname(c.command!)}:` : "";
  return {
    command: wrapped.command,
    args: wrapped.args,
    env: { ...CLEAN_ENV, PATH: `${binDir}${CLEAN_ENV.PATH}`, ...c.env },
    cwd,
  };
}

/** A fresh transport to server `name`: a (sandboxed) child process, or streamable HTTP (with OAuth when it has a login). */
export function openTransport(
  name: string,
  c: McpServerConfig,
  runtime: McpRuntime,
  log: Logger,
  authProvider?: OAuthClientProvider,
): Transport {
  if (c.transport === "stdio") {
    const t = new StdioClientTransport({ ...stdioSpawn(c, runtime), stderr: "pipe" });
    // Drained so a chatty server cannot block on a full pipe; kept for diagnosis.
    t.stderr?.on("data", (d: Buffer) => log.debug({ mcp: name, stderr: d.toString().trimEnd() }, "mcp stderr"));
    return t;
  }
  return new StreamableHTTPClientTransport(new URL(c.url!), {
    requestInit: { headers: c.headers },
    ...(authProvider ? { authProvider } : {}),
  });
}
