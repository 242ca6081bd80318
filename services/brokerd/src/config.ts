import type { SchemaObject } from "ajv";
import { DEFAULT_DIRS, DEFAULT_SOCKETS, loadConfig, logLevelSchema, parseConfig } from "@boxmaker/common";
import type { BrokerConfig } from "./config-types.js";
import { hooksSchema } from "./hooks/schema.js";

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
  "*.tfvars",
  // Backups and variants of the above an editor or a person leaves beside them.
  ".env~",
  "*.env",
  ".env*.bak",
  // Credentials of common tools, where each keeps them.
  ".vault-token",
  ".config/gh/hosts.yml",
  ".config/hub",
  ".config/gcloud",
  "application_default_credentials.json",
  ".azure",
  ".oci/config",
  ".boto",
  ".s3cfg",
  ".config/rclone/rclone.conf",
  ".config/doctl",
  ".cargo/credentials",
  ".cargo/credentials.toml",
  ".gem/credentials",
  ".m2/settings.xml",
  ".m2/settings-security.xml",
  ".gradle/gradle.properties",
  ".composer/auth.json",
  ".config/containers/auth.json",
  ".terraformrc",
  ".terraform.d/credentials.tfrc.json",
  ".kaggle/kaggle.json",
  ".huggingface/token",
  ".cache/huggingface/token",
  ".config/sops",
  ".my.cnf",
  ".mylogin.cnf",
  "*.ppk",
  "*.kdbx",
  "*.gpg",
  ".password-store",
  ".local/share/keyrings",
  ".Xauthority",
  // Shell and REPL histories: commands typed with tokens in them.
  ".*_history",
  ".*history.txt",
  ".lesshst",
  ".viminfo",
  // Browser profiles: cookies and saved passwords.
  ".mozilla",
  ".config/google-chrome",
  ".config/chromium",
  ".config/BraveSoftware",
];

const DEFAULT_RO_PATHS = [
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

/**
 * The one source of truth for brokerd's settings and their defaults; their
 * types are in config-types.ts. A plain schema object: ajv's JSONSchemaType
 * cannot express objects defaulted to {} whose keys all have defaults, so the
 * result type is given where it is parsed.
 */
export const brokerConfigSchema: SchemaObject = {
  type: "object",
  additionalProperties: false,
  properties: {
    socket: { type: "string", minLength: 1, default: DEFAULT_SOCKETS.brokerd },
    state_dir: { type: "string", minLength: 1, default: DEFAULT_DIRS.brokerdState },
    workspace_roots: { ...strings, default: [] },
    // Boxmaker's config, state (session logs, blobs, slot saves) and sockets in the
    // standard layout; brokerd adds its own state_dir, config file and install root.
    protected_paths: { ...strings, default: ["/etc/boxmaker", "/var/lib/boxmaker", "/run/boxmaker"] },
    secret_patterns: { ...strings, default: DEFAULT_SECRET_PATTERNS },
    // Added to the built-in lists in policy/protected-paths.ts; a default goes only when `unprotect` names it.
    protected_patterns: { ...strings, default: [] },
    reviewed_patterns: { ...strings, default: [] },
    unprotect: { ...strings, default: [] },
    allow_home_workspace: { type: "boolean", default: false },
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
        net_proxy: {
          type: "object",
          additionalProperties: false,
          default: {},
          properties: {
            enabled: { type: "boolean", default: false },
            socat_path: { type: "string", minLength: 1, default: "/usr/bin/socat" },
            port: { type: "integer", minimum: 1, maximum: 65535, default: 3128 },
            allow_private_hosts: { ...strings, default: [] },
            addresses: {
              type: "object",
              default: {},
              required: [],
              additionalProperties: { type: "string", pattern: "^[0-9a-fA-F:.]{2,45}$" },
            },
            connect_timeout_ms: positive(10_000),
            handshake_timeout_ms: positive(10_000),
            max_connections: positive(64),
          },
          required: [
            "enabled",
            "socat_path",
            "port",
            "allow_private_hosts",
            "addresses",
            "connect_timeout_ms",
            "handshake_timeout_ms",
            "max_connections",
          ],
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
        "net_proxy",
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
    // state_dir/audit.jsonl is rotated past rotate_bytes (to .1, .2 …); keep_files rotated files are kept,
    // so the trail on disk stays under (keep_files + 1) × rotate_bytes. Every line is in the journal too.
    audit_log: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        rotate_bytes: { type: "integer", minimum: 4096, default: 64 * 1024 * 1024 },
        keep_files: { type: "integer", minimum: 0, maximum: 1000, default: 8 },
      },
      required: ["rotate_bytes", "keep_files"],
    },
    // state_dir/disclosure.jsonl is compacted at each start to one line per session; a session that was
    // shown no tool for retention_days is dropped (its next call_tool of an old tool asks for find_tool). 0 keeps all.
    disclosure: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: { retention_days: { type: "integer", minimum: 0, default: 90 } },
      required: ["retention_days"],
    },
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
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else keyword, not a thenable.
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
    hooks: hooksSchema("operator"),
    log_level: logLevelSchema,
  },
  required: [],
};

export const loadBrokerConfig = (path: string | undefined): BrokerConfig =>
  loadConfig<BrokerConfig>(brokerConfigSchema, path);
export const parseBrokerConfig = (data: unknown): BrokerConfig => parseConfig<BrokerConfig>(brokerConfigSchema, data);
