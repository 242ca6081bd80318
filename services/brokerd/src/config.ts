import {
  DEFAULT_DIRS,
  DEFAULT_SOCKETS,
  loadConfig,
  logLevelSchema,
  MapOf,
  Nullable,
  parseConfig,
  StringEnum,
  Type,
} from "@boxmaker/common";
import { positive, strings } from "./config-schema-parts.js";
import { operatorHooksSchema } from "./hooks/schema.js";
import { mcpServerSchema } from "./mcp/server-config.js";
import { DEFAULT_SECRET_PATTERNS } from "./policy/secret-patterns.js";
import { sandboxConfigSchema } from "./sandbox-config.js";

// The defaults' own module; the tests that match against them import them from here.
export { DEFAULT_SECRET_PATTERNS } from "./policy/secret-patterns.js";

const EFFECTS = ["allow", "ask", "deny"] as const;
const effect = (options = {}) => StringEnum(EFFECTS, options);

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

/** A core tool another daemon runs (loopd's spawn_agent): declared here so the epoch's array includes it. */
const extraCoreTool = Type.Object(
  {
    name: Type.String({ pattern: "^[a-zA-Z0-9_-]{1,64}$" }),
    description: Type.String(),
    parameters: Type.Unsafe<Record<string, unknown>>({ type: "object", required: [] }),
  },
  { additionalProperties: false },
);

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
    sandbox: sandboxConfigSchema,
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
    mcp_servers: MapOf(mcpServerSchema, {
      default: {},
      propertyNames: { pattern: "^[a-zA-Z0-9_-]{1,32}$" },
      required: [],
    }),
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
