import {
  DEFAULT_DIRS,
  DEFAULT_SOCKETS,
  loadConfig,
  logLevelSchema,
  MapOf,
  Nullable,
  parseConfig,
  type Static,
  StringEnum,
  Type,
} from "@boxmaker/common";
import { operatorHooksSchema } from "./hooks/schema.js";

const EFFECTS = ["allow", "ask", "deny"] as const;
const RISKS = ["read", "write", "exec", "network"] as const;
const effect = (options = {}) => StringEnum(EFFECTS, options);
const strings = (options = {}) => Type.Array(Type.String(), options);
const positive = (def: number) => Type.Integer({ minimum: 1, default: def });

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

/** One operator rule; see policy/rules.ts for how rules combine. */
const policyRule = Type.Object(
  {
    /** Shown in the audit trail and to the person; defaults to `rule[i]`. */
    name: Nullable(Type.String()),
    /** Tool name or glob over tool names (`*`, `github.*`). */
    tool: Type.String({ minLength: 1 }),
    effect: effect(),
    /** Globs over workspace-relative paths (`src/**`), or absolute when they start with `/`. */
    paths: Nullable(strings()),
    /** Command prefixes for run_command, whole words (`git status`, `npm test`). */
    command_prefixes: Nullable(strings()),
    /** URL hosts (`api.github.com`, `*.example.org`) for tools whose arguments carry a `url`. */
    hosts: Nullable(strings()),
  },
  { additionalProperties: false },
);

/** Kernel limits on every command (rlimits set inside the sandbox before the command starts). */
const sandboxLimits = Type.Object(
  {
    /** RLIMIT_NPROC (not enforced by the kernel for uid 0: run brokerd as its own user). */
    max_processes: positive(256),
    /** RLIMIT_DATA: heap and private writable mappings per process. */
    max_memory_bytes: positive(1024 * 1024 * 1024),
    /** RLIMIT_FSIZE: the largest file one process may write (also bounds each file in /tmp). */
    max_file_bytes: positive(512 * 1024 * 1024),
    /** RLIMIT_NOFILE. */
    max_open_files: positive(1024),
  },
  { additionalProperties: false, default: {} },
);

/** The allowlist proxy commands reach the network through (net-proxy/); off by default. */
const netProxy = Type.Object(
  {
    enabled: Type.Boolean({ default: false }),
    /** The bridge run inside the sandbox, from its loopback port to the proxy's Unix socket. */
    socat_path: Type.String({ minLength: 1, default: "/usr/bin/socat" }),
    /** The port on the sandbox's own loopback that HTTP_PROXY, HTTPS_PROXY and ALL_PROXY name. */
    port: Type.Integer({ minimum: 1, maximum: 65535, default: 3128 }),
    /** Hosts (canonical, or any spelling of one) that may be private, loopback or link-local addresses. */
    allow_private_hosts: strings({ default: [] }),
    /** Host → IP address, used instead of DNS (an /etc/hosts of the proxy's own). */
    addresses: MapOf(Type.String({ pattern: "^[0-9a-fA-F:.]{2,45}$" }), { default: {}, required: [] }),
    /** DNS and the upstream connect, each. */
    connect_timeout_ms: positive(10_000),
    /** How long a client may take to say where it wants to go. */
    handshake_timeout_ms: positive(10_000),
    /** Connections open at once, per command. */
    max_connections: positive(64),
  },
  { additionalProperties: false, default: {} },
);

/** A core tool another daemon runs (loopd's spawn_agent): declared here so the epoch's array includes it. */
const extraCoreTool = Type.Object(
  {
    name: Type.String({ pattern: "^[a-zA-Z0-9_-]{1,64}$" }),
    description: Type.String(),
    parameters: Type.Unsafe<Record<string, unknown>>({ type: "object", required: [] }),
  },
  { additionalProperties: false },
);

// What if/then/else asks of each transport. One object shape with a conditional requirement, not a
// union: ajv fills no defaults inside anyOf or oneOf. The type is the union the condition makes.
const stdioTransport = Type.Object({ transport: Type.Optional(Type.Literal("stdio")) });
const stdioNeeds = Type.Object({ command: Type.String() });
const httpNeeds = Type.Object({ url: Type.String() });

const mcpServerObject = Type.Object(
  {
    transport: StringEnum(["stdio", "http"]),
    command: Nullable(Type.String({ minLength: 1 })),
    args: strings({ default: [] }),
    env: MapOf(Type.String(), { required: [], default: {} }),
    cwd: Nullable(Type.String()),
    url: Nullable(Type.String({ pattern: "^https?://" })),
    headers: MapOf(Type.String(), { required: [], default: {} }),
    /**
     * How policy treats a tool of this server whose annotations say nothing
     * (readOnlyHint → read, destructiveHint → write, openWorldHint → network);
     * default write (each call asks a person). `tools.<name>.risk` overrides both.
     */
    risk: StringEnum(RISKS, { default: "write" }),
    /** A call's deadline without progress; progress notifications extend it up to max_total_timeout_ms. */
    timeout_ms: positive(30_000),
    /** Starting the server and listing its tools. */
    connect_timeout_ms: positive(10_000),
    /** The hard ceiling for one call, however much progress it reports. */
    max_total_timeout_ms: positive(600_000),
    /** stdio only: run the server in the bwrap sandbox commands use (default true). */
    sandbox: Type.Boolean({ default: true }),
    /** stdio only: extra paths the sandboxed server may read, or read and write. */
    ro_paths: strings({ default: [] }),
    rw_paths: strings({ default: [] }),
    /** Hosts the server reaches: granting any gives a sandboxed server the network, and policy sees them on every call. */
    hosts: strings({ default: [] }),
    /**
     * Argument names holding paths, checked by the path policy like built-in
     * tools' paths (and passed on resolved). Unset: path, paths, source,
     * destination, file, directory when the tool's schema has them; [] turns it off.
     */
    path_args: Nullable(strings()),
    /** Per-tool overrides. */
    tools: MapOf(
      Type.Object(
        { risk: Nullable(StringEnum(RISKS)), path_args: Nullable(strings()), hidden: Nullable(Type.Boolean()) },
        { additionalProperties: false },
      ),
      { default: {}, required: [] },
    ),
  },
  {
    additionalProperties: false,
    if: stdioTransport,
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else keyword, not a thenable.
    then: stdioNeeds,
    else: httpNeeds,
  },
);
type McpServerFields = Omit<Static<typeof mcpServerObject>, "transport">;
const mcpServer = Type.Unsafe<
  | (McpServerFields & { transport: "stdio" } & Static<typeof stdioNeeds>)
  | (McpServerFields & { transport: "http" } & Static<typeof httpNeeds>)
>(mcpServerObject);

/**
 * The one source of truth for brokerd's settings, their defaults and their
 * types (config-types.ts names the parts the code passes around).
 */
export const brokerConfigSchema = Type.Object(
  {
    socket: Type.String({ minLength: 1, default: DEFAULT_SOCKETS.brokerd }),
    state_dir: Type.String({ minLength: 1, default: DEFAULT_DIRS.brokerdState }),
    workspace_roots: strings({ default: [] }),
    // Boxmaker's config, state (session logs, blobs, slot saves) and sockets in the
    // standard layout; brokerd adds its own state_dir, config file and install root.
    protected_paths: strings({ default: ["/etc/boxmaker", "/var/lib/boxmaker", "/run/boxmaker"] }),
    secret_patterns: strings({ default: DEFAULT_SECRET_PATTERNS }),
    // Added to the built-in lists in policy/protected-paths.ts; a default goes only when `unprotect` names it.
    /** Workspace globs the model never writes, beyond the defaults (policy/protected-paths.ts). */
    protected_patterns: strings({ default: [] }),
    /** Workspace globs the model writes only with a person's approval, beyond the defaults. */
    reviewed_patterns: strings({ default: [] }),
    /** Default protected or reviewed globs the operator explicitly removes. */
    unprotect: strings({ default: [] }),
    /**
     * Secrets recognised by content (secrets/rules.json) are masked in what the model is sent and refused by
     * the network proxy. `allow` is the way out for a false positive: an entry with `rule` turns that rule off,
     * with `path` (a glob as in secret_patterns) leaves those files' contents alone, with both only that rule there.
     */
    secrets: Type.Object(
      {
        allow: Type.Array(
          Type.Object(
            { path: Type.Optional(Type.String({ minLength: 1 })), rule: Type.Optional(Type.String({ minLength: 1 })) },
            { additionalProperties: false, minProperties: 1 },
          ),
          { default: [] },
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    /** A workspace root at (or above) a home directory is refused unless this is true. */
    allow_home_workspace: Type.Boolean({ default: false }),
    policy: Type.Object(
      {
        defaults: Type.Object(
          {
            read: effect({ default: "allow" }),
            write: effect({ default: "ask" }),
            exec: effect({ default: "ask" }),
            network: effect({ default: "ask" }),
          },
          { additionalProperties: false, default: {} },
        ),
        rules: Type.Array(policyRule, { default: [] }),
      },
      { additionalProperties: false, default: {} },
    ),
    sandbox: Type.Object(
      {
        mode: StringEnum(["bwrap", "none"], { default: "bwrap" }),
        allow_unsandboxed: Type.Boolean({ default: false }),
        bwrap_path: Type.String({ default: "/usr/bin/bwrap" }),
        timeout_ms: positive(120_000),
        output_cap_bytes: positive(1024 * 1024),
        network: Type.Boolean({ default: false }),
        ro_paths: strings({ default: DEFAULT_RO_PATHS }),
        limits: sandboxLimits,
        net_proxy: netProxy,
      },
      { additionalProperties: false, default: {} },
    ),
    result_cap_bytes: positive(16 * 1024),
    /** fetch_url (extended tool, risk network): limits, and private addresses a person allowed. */
    fetch_url: Type.Object(
      {
        max_bytes: positive(2 * 1024 * 1024),
        timeout_ms: positive(20_000),
        max_redirects: Type.Integer({ minimum: 0, default: 5 }),
        // Hosts (as written in the URL, or an IP) that may resolve to a private, loopback or link-local address.
        allow_private_hosts: Type.Array(Type.String(), { default: [] }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** The blob store's size cap; the least recently used unpinned blobs go above it. 0 = no cap. */
    blob_cap_bytes: Type.Integer({ minimum: 0, default: 4 * 1024 * 1024 * 1024 }),
    // state_dir/audit.jsonl is rotated past rotate_bytes (to .1, .2 …); keep_files rotated files are kept,
    // so the trail on disk stays under (keep_files + 1) × rotate_bytes. Every line is in the journal too.
    audit_log: Type.Object(
      {
        rotate_bytes: Type.Integer({ minimum: 4096, default: 64 * 1024 * 1024 }),
        keep_files: Type.Integer({ minimum: 0, maximum: 1000, default: 8 }),
      },
      { additionalProperties: false, default: {} },
    ),
    // state_dir/disclosure.jsonl is compacted at each start to one line per session; a session that was
    // shown no tool for retention_days is dropped (its next call_tool of an old tool asks for find_tool). 0 keeps all.
    disclosure: Type.Object(
      { retention_days: Type.Integer({ minimum: 0, default: 90 }) },
      { additionalProperties: false, default: {} },
    ),
    // Decided proposals (state_dir/proposals/decided/) are deleted once decided longer ago than
    // keep_decided_days or beyond the newest keep_decided_max; pending ones stay. 0 keeps all.
    proposals: Type.Object(
      {
        keep_decided_days: Type.Integer({ minimum: 0, default: 30 }),
        keep_decided_max: Type.Integer({ minimum: 0, default: 10_000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    // Checkpoints (state_dir/checkpoints/): a session's are deleted, whole, once its last change is
    // older than keep_days or it is beyond the keep_sessions most recently changed. 0 keeps all.
    checkpoints: Type.Object(
      {
        keep_days: Type.Integer({ minimum: 0, default: 30 }),
        keep_sessions: Type.Integer({ minimum: 0, default: 1_000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    limits: Type.Object(
      {
        max_argument_bytes: positive(1024 * 1024),
        max_file_bytes: positive(8 * 1024 * 1024),
        list_max_entries: positive(1000),
        search_max_matches: positive(200),
        search_max_files: positive(20_000),
        search_timeout_ms: positive(10_000),
      },
      { additionalProperties: false, default: {} },
    ),
    find_tool_results: Type.Integer({ minimum: 1, maximum: 10, default: 3 }),
    extra_core_tools: Type.Array(extraCoreTool, { default: [] }),
    mcp_servers: MapOf(mcpServer, { default: {}, propertyNames: { pattern: "^[a-zA-Z0-9_-]{1,32}$" }, required: [] }),
    mcp_reconnect: Type.Object(
      { initial_ms: positive(1_000), max_ms: positive(60_000) },
      { additionalProperties: false, default: {} },
    ),
    /** Commands run at a session's events (hooks/); a workspace's own file adds to them once a person trusts it. */
    hooks: operatorHooksSchema,
    log_level: logLevelSchema,
  },
  { additionalProperties: false },
);

export const loadBrokerConfig = (path: string | undefined) => loadConfig(brokerConfigSchema, path);
export const parseBrokerConfig = (data: unknown) => parseConfig(brokerConfigSchema, data);
