import type { LogLevel } from "@boxmaker/common";
import type { HooksConfig } from "./hooks/types.js";

/** brokerd's settings as the code sees them, after the schema (config.ts) filled every default. */

export type Effect = "allow" | "ask" | "deny";
export type Risk = "read" | "write" | "exec" | "network";

/** One operator rule; see policy/rules.ts for how rules combine. */
export interface PolicyRule {
  /** Shown in the audit trail and to the person; defaults to `rule[i]`. */
  name?: string;
  /** Tool name or glob over tool names (`*`, `github.*`). */
  tool: string;
  effect: Effect;
  /** Globs over workspace-relative paths (`src/**`), or absolute when they start with `/`. */
  paths?: string[];
  /** Command prefixes for run_command, whole words (`git status`, `npm test`). */
  command_prefixes?: string[];
  /** URL hosts (`api.github.com`, `*.example.org`) for tools whose arguments carry a `url`. */
  hosts?: string[];
}

/** `command` is required for stdio, `url` for http (the schema enforces it). */
export interface McpServerConfig {
  transport: "stdio" | "http";
  command?: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  url?: string;
  headers: Record<string, string>;
  /**
   * How policy treats a tool of this server whose annotations say nothing
   * (readOnlyHint → read, destructiveHint → write, openWorldHint → network);
   * default write (each call asks a person). `tools.<name>.risk` overrides both.
   */
  risk: Risk;
  /** A call's deadline without progress; progress notifications extend it up to max_total_timeout_ms. */
  timeout_ms: number;
  /** Starting the server and listing its tools. */
  connect_timeout_ms: number;
  /** The hard ceiling for one call, however much progress it reports. */
  max_total_timeout_ms: number;
  /** stdio only: run the server in the bwrap sandbox commands use (default true). */
  sandbox: boolean;
  /** stdio only: extra paths the sandboxed server may read, or read and write. */
  ro_paths: string[];
  rw_paths: string[];
  /** Hosts the server reaches: granting any gives a sandboxed server the network, and policy sees them on every call. */
  hosts: string[];
  /**
   * Argument names holding paths, checked by the path policy like built-in
   * tools' paths (and passed on resolved). Unset: path, paths, source,
   * destination, file, directory when the tool's schema has them; [] turns it off.
   */
  path_args?: string[];
  /** Per-tool overrides. */
  tools: Record<string, { risk?: Risk; path_args?: string[]; hidden?: boolean }>;
}

/** A core tool another daemon runs (loopd's spawn_agent): declared here so the epoch's array includes it. */
export interface ExtraCoreTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface SandboxLimits {
  /** RLIMIT_NPROC (not enforced by the kernel for uid 0: run brokerd as its own user). */
  max_processes: number;
  /** RLIMIT_DATA: heap and private writable mappings per process. */
  max_memory_bytes: number;
  /** RLIMIT_FSIZE: the largest file one process may write (also bounds each file in /tmp). */
  max_file_bytes: number;
  /** RLIMIT_NOFILE. */
  max_open_files: number;
}

/** The allowlist proxy commands reach the network through (net-proxy/); off by default. */
export interface NetProxyConfig {
  enabled: boolean;
  /** The bridge run inside the sandbox, from its loopback port to the proxy's Unix socket. */
  socat_path: string;
  /** The port on the sandbox's own loopback that HTTP_PROXY, HTTPS_PROXY and ALL_PROXY name. */
  port: number;
  /** Hosts (canonical, or any spelling of one) that may be private, loopback or link-local addresses. */
  allow_private_hosts: string[];
  /** Host → IP address, used instead of DNS (an /etc/hosts of the proxy's own). */
  addresses: Record<string, string>;
  /** DNS and the upstream connect, each. */
  connect_timeout_ms: number;
  /** How long a client may take to say where it wants to go. */
  handshake_timeout_ms: number;
  /** Connections open at once, per command. */
  max_connections: number;
}

export interface BrokerConfig {
  socket: string;
  state_dir: string;
  workspace_roots: string[];
  protected_paths: string[];
  secret_patterns: string[];
  /** Workspace globs the model never writes, beyond the defaults (policy/protected-paths.ts). */
  protected_patterns: string[];
  /** Workspace globs the model writes only with a person's approval, beyond the defaults. */
  reviewed_patterns: string[];
  /** Default protected or reviewed globs the operator explicitly removes. */
  unprotect: string[];
  /** A workspace root at (or above) a home directory is refused unless this is true. */
  allow_home_workspace: boolean;
  policy: {
    defaults: Record<Risk, Effect>;
    rules: PolicyRule[];
  };
  sandbox: {
    mode: "bwrap" | "none";
    allow_unsandboxed: boolean;
    bwrap_path: string;
    timeout_ms: number;
    output_cap_bytes: number;
    network: boolean;
    ro_paths: string[];
    /** Kernel limits on every command (rlimits set inside the sandbox before the command starts). */
    limits: SandboxLimits;
    net_proxy: NetProxyConfig;
  };
  result_cap_bytes: number;
  /** fetch_url (extended tool, risk network): limits, and private addresses a person allowed. */
  fetch_url: { max_bytes: number; timeout_ms: number; max_redirects: number; allow_private_hosts: string[] };
  /** The blob store's size cap; the least recently used unpinned blobs go above it. 0 = no cap. */
  blob_cap_bytes: number;
  /** audit.jsonl is rotated past rotate_bytes; keep_files rotated files are kept. */
  audit_log: { rotate_bytes: number; keep_files: number };
  /** disclosure.jsonl is compacted at start; sessions shown nothing for retention_days are dropped (0: none). */
  disclosure: { retention_days: number };
  limits: {
    max_argument_bytes: number;
    max_file_bytes: number;
    list_max_entries: number;
    search_max_matches: number;
    search_max_files: number;
    search_timeout_ms: number;
  };
  find_tool_results: number;
  extra_core_tools: ExtraCoreTool[];
  mcp_servers: Record<string, McpServerConfig>;
  mcp_reconnect: { initial_ms: number; max_ms: number };
  /** Commands run at a session's events (hooks/); a workspace's own file adds to them once a person trusts it. */
  hooks: HooksConfig;
  log_level: LogLevel;
}
