import type { JSONSchemaType } from "ajv";
import { loadConfig, logLevelSchema, parseConfig, type LogLevel } from "@boxmaker/common";

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

export interface BrokerConfig {
  socket: string;
  state_dir: string;
  workspace_roots: string[];
  protected_paths: string[];
  secret_patterns: string[];
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
  };
  result_cap_bytes: number;
  /** fetch_url (extended tool, risk network): limits, and private addresses a person allowed. */
  fetch_url: { max_bytes: number; timeout_ms: number; max_redirects: number; allow_private_hosts: string[] };
  /** The blob store's size cap; the least recently used unpinned blobs go above it. 0 = no cap. */
  blob_cap_bytes: number;
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
  log_level: LogLevel;
}

const effect = { type: "string", enum: ["allow", "ask", "deny"] } as const;
const risk = { type: "string", enum: ["read", "write", "exec", "network"], default: "write" } as const;
const strings = { type: "array", items: { type: "string" } } as const;
const positive = (def: number) => ({ type: "integer", minimum: 1, default: def }) as const;

/** Matched case-insensitively against every segment run of a path (see policy/glob.ts). */
export const DEFAULT_SECRET_PATTERNS = [
  ".env",
  ".env.*",
  ".envrc",
  "*.pem",
  "*.key",
  "*.p12",
  "*.pfx",
  "*.jks",
  "*.keystore",
  "id_rsa*",
  "id_dsa*",
  "id_ecdsa*",
  "id_ed25519*",
  ".ssh",
  ".gnupg",
  ".aws/credentials",
  ".aws/config",
  ".netrc",
  ".git-credentials",
  ".git/config",
  ".npmrc",
  ".pypirc",
  ".pgpass",
  ".htpasswd",
  ".docker/config.json",
  ".kube/config",
  "kubeconfig",
  "*.kubeconfig",
  "credentials.json",
  "client_secret*.json",
  "service-account*.json",
  "secrets.yaml",
  "secrets.yml",
  "secrets.json",
  "*.tfstate",
  "*.tfstate.*",
];

export const DEFAULT_RO_PATHS = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib64",
  "/nix/store",
  "/run/current-system",
  "/etc/alternatives",
  "/etc/ld.so.cache",
  "/etc/ssl",
  "/etc/ca-certificates",
  "/etc/passwd",
  "/etc/group",
  "/etc/localtime",
  "/etc/nsswitch.conf",
];

/** The one source of truth for brokerd's settings, their types and defaults. */
export const brokerConfigSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    socket: { type: "string", minLength: 1, default: "/run/boxmaker/brokerd.sock" },
    state_dir: { type: "string", minLength: 1, default: "/var/lib/boxmaker/broker" },
    workspace_roots: { ...strings, default: [] },
    // Boxmaker's config, state (session logs, blobs, slot saves) and sockets in the
    // standard layout; brokerd adds its own state_dir, config file and install root.
    protected_paths: { ...strings, default: ["/etc/boxmaker", "/var/lib/boxmaker", "/run/boxmaker"] },
    secret_patterns: { ...strings, default: DEFAULT_SECRET_PATTERNS },
    policy: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        defaults: {
          type: "object",
          additionalProperties: false,
          default: {},
          properties: {
            read: { ...effect, default: "allow" },
            write: { ...effect, default: "ask" },
            exec: { ...effect, default: "ask" },
            network: { ...effect, default: "ask" },
          },
          required: ["read", "write", "exec", "network"],
        },
        rules: {
          type: "array",
          default: [],
          items: {
            type: "object",
            additionalProperties: false,
            properties: {
              name: { type: "string", nullable: true },
              tool: { type: "string", minLength: 1 },
              effect,
              paths: { ...strings, nullable: true },
              command_prefixes: { ...strings, nullable: true },
              hosts: { ...strings, nullable: true },
            },
            required: ["tool", "effect"],
          },
        },
      },
      required: ["defaults", "rules"],
    },
    sandbox: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        mode: { type: "string", enum: ["bwrap", "none"], default: "bwrap" },
        allow_unsandboxed: { type: "boolean", default: false },
        bwrap_path: { type: "string", default: "/usr/bin/bwrap" },
        timeout_ms: positive(120_000),
        output_cap_bytes: positive(1024 * 1024),
        network: { type: "boolean", default: false },
        ro_paths: { ...strings, default: DEFAULT_RO_PATHS },
        limits: {
          type: "object",
          additionalProperties: false,
          default: {},
          properties: {
            max_processes: positive(256),
            max_memory_bytes: positive(1024 * 1024 * 1024),
            max_file_bytes: positive(512 * 1024 * 1024),
            max_open_files: positive(1024),
          },
          required: ["max_processes", "max_memory_bytes", "max_file_bytes", "max_open_files"],
        },
      },
      required: [
        "mode",
        "allow_unsandboxed",
        "bwrap_path",
        "timeout_ms",
        "output_cap_bytes",
        "network",
        "ro_paths",
        "limits",
      ],
    },
    result_cap_bytes: positive(16 * 1024),
    fetch_url: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        max_bytes: positive(2 * 1024 * 1024),
        timeout_ms: positive(20_000),
        max_redirects: { type: "integer", minimum: 0, default: 5 },
        // Hosts (as written in the URL, or an IP) that may resolve to a private, loopback or link-local address.
        allow_private_hosts: { type: "array", items: { type: "string" }, default: [] },
      },
      required: ["max_bytes", "timeout_ms", "max_redirects", "allow_private_hosts"],
    },
    blob_cap_bytes: { type: "integer", minimum: 0, default: 4 * 1024 * 1024 * 1024 },
    limits: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        max_argument_bytes: positive(1024 * 1024),
        max_file_bytes: positive(8 * 1024 * 1024),
        list_max_entries: positive(1000),
        search_max_matches: positive(200),
        search_max_files: positive(20_000),
        search_timeout_ms: positive(10_000),
      },
      required: [
        "max_argument_bytes",
        "max_file_bytes",
        "list_max_entries",
        "search_max_matches",
        "search_max_files",
        "search_timeout_ms",
      ],
    },
    find_tool_results: { type: "integer", minimum: 1, maximum: 10, default: 3 },
    extra_core_tools: {
      type: "array",
      default: [],
      items: {
        type: "object",
        additionalProperties: false,
        properties: {
          name: { type: "string", pattern: "^[a-zA-Z0-9_-]{1,64}$" },
          description: { type: "string" },
          parameters: { type: "object", required: [] },
        },
        required: ["name", "description", "parameters"],
      },
    },
    mcp_servers: {
      type: "object",
      default: {},
      propertyNames: { pattern: "^[a-zA-Z0-9_-]{1,32}$" },
      required: [],
      additionalProperties: {
        type: "object",
        additionalProperties: false,
        properties: {
          transport: { type: "string", enum: ["stdio", "http"] },
          command: { type: "string", minLength: 1, nullable: true },
          args: { ...strings, default: [] },
          env: { type: "object", additionalProperties: { type: "string" }, required: [], default: {} },
          cwd: { type: "string", nullable: true },
          url: { type: "string", pattern: "^https?://", nullable: true },
          headers: { type: "object", additionalProperties: { type: "string" }, required: [], default: {} },
          risk,
          timeout_ms: positive(30_000),
          connect_timeout_ms: positive(10_000),
          max_total_timeout_ms: positive(600_000),
          sandbox: { type: "boolean", default: true },
          ro_paths: { ...strings, default: [] },
          rw_paths: { ...strings, default: [] },
          hosts: { ...strings, default: [] },
          path_args: { ...strings, nullable: true },
          tools: {
            type: "object",
            default: {},
            required: [],
            additionalProperties: {
              type: "object",
              additionalProperties: false,
              properties: {
                risk: { type: "string", enum: ["read", "write", "exec", "network"], nullable: true },
                path_args: { ...strings, nullable: true },
                hidden: { type: "boolean", nullable: true },
              },
            },
          },
        },
        required: [
          "transport",
          "args",
          "env",
          "headers",
          "risk",
          "timeout_ms",
          "connect_timeout_ms",
          "max_total_timeout_ms",
          "sandbox",
          "ro_paths",
          "rw_paths",
          "hosts",
          "tools",
        ],
        // One object shape with a conditional requirement: ajv ignores defaults inside oneOf.
        if: { type: "object", properties: { transport: { type: "string", const: "stdio" } } },
        then: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
        else: { type: "object", properties: { url: { type: "string" } }, required: ["url"] },
      },
    },
    mcp_reconnect: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: { initial_ms: positive(1_000), max_ms: positive(60_000) },
      required: ["initial_ms", "max_ms"],
    },
    log_level: logLevelSchema,
  },
  required: [],
} as unknown as JSONSchemaType<BrokerConfig>;

export const loadBrokerConfig = (path: string | undefined): BrokerConfig => loadConfig(brokerConfigSchema, path);
export const parseBrokerConfig = (data: unknown): BrokerConfig => parseConfig(brokerConfigSchema, data);
