import {
  DEFAULT_BUDGETS,
  DEFAULT_DIRS,
  DEFAULT_SOCKETS,
  MAX_TOKENS_PER_REQUEST,
  SLOT_IDS,
  logLevelSchema,
  type ConfigOf,
  type ConfigSchema,
  type SchemaObject,
} from "@boxmaker/common";

const budgetSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    max_iterations: { type: "integer", minimum: 0, default: DEFAULT_BUDGETS.max_iterations },
    max_total_tokens: { type: "integer", minimum: 0, default: DEFAULT_BUDGETS.max_total_tokens },
    max_wall_ms: { type: "integer", minimum: 0, default: DEFAULT_BUDGETS.max_wall_ms },
    max_thinking_tokens: { type: "integer", minimum: 0, default: DEFAULT_BUDGETS.max_thinking_tokens },
  },
  required: [],
  default: {},
} as const;

/**
 * The one schema for loopd's config: keys, types and defaults live here and
 * nowhere else (`LoopdConfig` is derived from it; the stack-wide defaults come
 * from common's stack-defaults).
 */
const schema = {
  type: "object",
  additionalProperties: false,
  properties: {
    socket: { type: "string", minLength: 1, default: DEFAULT_SOCKETS.loopd },
    state_dir: { type: "string", minLength: 1, default: DEFAULT_DIRS.loopdState },
    inferproxy_socket: { type: "string", minLength: 1, default: DEFAULT_SOCKETS.inferproxy },
    brokerd_socket: { type: "string", minLength: 1, default: DEFAULT_SOCKETS.brokerd },
    // Which llama-server slot each role's sessions run on.
    slots: {
      type: "object",
      additionalProperties: false,
      properties: {
        main: { type: "integer", minimum: 0, default: SLOT_IDS.main },
        subagent: { type: "integer", minimum: 0, default: SLOT_IDS.subagent },
        scheduled: { type: "integer", minimum: 0, default: SLOT_IDS.scheduled },
      },
      required: [],
      default: {},
    },
    system_prompt: {
      type: "string",
      default:
        "You are Boxmaker, an agent on the operator's workstation. Use tools when they help. " +
        "Tools beyond your core set are found with find_tool and called with call_tool.",
    },
    // max_tokens of each model request (lowered to what the turn's budget has left).
    max_tokens: { type: "integer", minimum: 1, default: MAX_TOKENS_PER_REQUEST },
    budgets: budgetSchema,
    // Save and restore a slot's KV cache when sessions take turns on it (needs llama-server --slot-save-path).
    parking: {
      type: "object",
      additionalProperties: false,
      properties: { enabled: { type: "boolean", default: false } },
      required: [],
      default: {},
    },
    // A session nobody has used for this long is dropped from memory (listed from its summary, read again when
    // used): a daemon that runs for months holds what is in use, not every session it touched. 0 keeps them all.
    session_idle_ms: { type: "integer", minimum: 0, default: 600_000 },
    // How long a turn waits for a person to approve a staged write before telling the model it is still pending.
    approval_wait_ms: { type: "integer", minimum: 0, default: 600_000 },
    // A file such as AGENTS.md at the workspace root, put into the system prompt of each new epoch.
    project_instructions: {
      type: "object",
      additionalProperties: false,
      properties: {
        workspace: { type: "string", default: "" },
        files: { type: "array", items: { type: "string", minLength: 1 }, default: ["AGENTS.md"] },
        max_bytes: { type: "integer", minimum: 1, default: 32_768 },
      },
      required: [],
      default: {},
    },
    compaction: {
      type: "object",
      additionalProperties: false,
      properties: {
        threshold: { type: "number", exclusiveMinimum: 0, maximum: 1, default: 0.85 },
        keep_recent_messages: { type: "integer", minimum: 0, default: 8 },
      },
      required: [],
      default: {},
    },
    // The inbound pre-pass: blocks of a person's message above threshold_bytes are reduced, excerpted and spilled to blobs.
    prepass: {
      type: "object",
      additionalProperties: false,
      properties: {
        enabled: { type: "boolean", default: true },
        threshold_bytes: { type: "integer", minimum: 1024, default: 32_768 },
        excerpt_bytes: { type: "integer", minimum: 512, default: 6_144 },
      },
      required: [],
      default: {},
    },
    schedules: {
      type: "array",
      default: [],
      items: {
        type: "object",
        additionalProperties: false,
        properties: {
          id: { type: "string", minLength: 1 },
          cron: { type: "string", minLength: 1 },
          prompt: { type: "string", minLength: 1 },
        },
        required: ["id", "cron", "prompt"],
      },
    },
    log_level: logLevelSchema,
  },
  required: [],
} as const satisfies SchemaObject;

export type LoopdConfig = ConfigOf<typeof schema>;
export type ScheduleConfig = LoopdConfig["schedules"][number];
export const loopdConfigSchema: ConfigSchema<LoopdConfig> = schema;
