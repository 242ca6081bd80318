import {
  DEFAULT_BUDGETS,
  DEFAULT_DIRS,
  DEFAULT_SOCKETS,
  MAX_TOKENS_PER_REQUEST,
  logLevelSchema,
  type Static,
  Type,
} from "@boxmaker/common";

const count = (def: number) => Type.Integer({ minimum: 0, default: def });
const optionalSlot = Type.Optional(Type.Integer({ minimum: 0 }));

const budgetSchema = Type.Object(
  {
    max_iterations: count(DEFAULT_BUDGETS.max_iterations),
    max_total_tokens: count(DEFAULT_BUDGETS.max_total_tokens),
    max_wall_ms: count(DEFAULT_BUDGETS.max_wall_ms),
    max_thinking_tokens: count(DEFAULT_BUDGETS.max_thinking_tokens),
  },
  { additionalProperties: false, default: {} },
);

/**
 * The one schema for loopd's config: keys, types and defaults live here and
 * nowhere else (`LoopdConfig` is its static type; the stack-wide defaults come
 * from common's stack-defaults).
 */
export const loopdConfigSchema = Type.Object(
  {
    socket: Type.String({ minLength: 1, default: DEFAULT_SOCKETS.loopd }),
    state_dir: Type.String({ minLength: 1, default: DEFAULT_DIRS.loopdState }),
    inferproxy_socket: Type.String({ minLength: 1, default: DEFAULT_SOCKETS.inferproxy }),
    brokerd_socket: Type.String({ minLength: 1, default: DEFAULT_SOCKETS.brokerd }),
    // Which llama-server slot each role's sessions run on. A role left out follows the server's slot count
    // (stack-defaults' SLOT_MAPS: 3 slots main 0, subagent 1, scheduled 2; 2 slots main 0, the others 1; 1 slot
    // all 0); a role given keeps its slot, and a slot the server lacks is refused (slot-map.ts).
    slots: Type.Object(
      { main: optionalSlot, subagent: optionalSlot, scheduled: optionalSlot },
      { additionalProperties: false, default: {} },
    ),
    // How often loopd asks inferproxy for the server's slot count (a restarted llama-server may have another
    // --parallel); 0 asks only at start.
    server_check_ms: count(5_000),
    system_prompt: Type.String({
      default:
        "You are Boxmaker, an agent on the operator's workstation. Use tools when they help. " +
        "Tools beyond your core set are found with find_tool and called with call_tool.",
    }),
    // max_tokens of each model request (lowered to what the turn's budget has left).
    max_tokens: Type.Integer({ minimum: 1, default: MAX_TOKENS_PER_REQUEST }),
    budgets: budgetSchema,
    // Save and restore a slot's KV cache when sessions take turns on it (needs llama-server --slot-save-path).
    parking: Type.Object({ enabled: Type.Boolean({ default: false }) }, { additionalProperties: false, default: {} }),
    // A session nobody has used for this long is dropped from memory (listed from its summary, read again when
    // used): a daemon that runs for months holds what is in use, not every session it touched. 0 keeps them all.
    session_idle_ms: count(600_000),
    // How long a call to inferproxy or brokerd waits for that daemon when it is not connected (restarted by systemd
    // or `boxmaker up`, back within seconds) before it fails, naming the daemon and its socket.
    peer_wait_ms: count(10_000),
    // The deadline of a call to inferproxy or brokerd that answers from memory or disk (listing proposals, changes,
    // hooks; status; blobs): a daemon that takes the call and never finishes it fails it, naming its socket. Calls that
    // run something first (a tool, an approved command, hooks, a slot save or restore) have their own, longer ceilings.
    peer_call_timeout_ms: Type.Integer({ minimum: 1, default: 60_000 }),
    // How long a turn whose model request was cut off (llama-server killed, crashed, restarted) waits for the server
    // to be back and pass its self-test, once per outage; a server still away then ends the turn. A model load is
    // seconds to a minute: the default covers a restart of a large model with room to spare.
    server_wait_ms: Type.Integer({ minimum: 1, default: 120_000 }),
    // Session logs of sessions nobody uses are compressed (gzip, beside the log), never deleted: `boxmaker rm` is how a
    // log goes. An archived session's after compress_archived_after_days, any session's after compress_idle_after_days
    // since its last record; at start and hourly, only sessions out of memory. A compressed log is read back plain
    // when its session is used. 0: never.
    session_logs: Type.Object(
      {
        compress_archived_after_days: count(30),
        compress_idle_after_days: count(90),
      },
      { additionalProperties: false, default: {} },
    ),
    // How long a turn waits for a person to approve a staged write before telling the model it is still pending.
    approval_wait_ms: count(600_000),
    // A file such as AGENTS.md at the workspace root, put into the system prompt of each new epoch.
    project_instructions: Type.Object(
      {
        workspace: Type.String({ default: "" }),
        files: Type.Array(Type.String({ minLength: 1 }), { default: ["AGENTS.md"] }),
        max_bytes: Type.Integer({ minimum: 1, default: 32_768 }),
      },
      { additionalProperties: false, default: {} },
    ),
    compaction: Type.Object(
      {
        threshold: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: 0.85 }),
        keep_recent_messages: count(8),
      },
      { additionalProperties: false, default: {} },
    ),
    // The inbound pre-pass: blocks of a person's message above threshold_bytes are reduced, excerpted and spilled to blobs.
    prepass: Type.Object(
      {
        enabled: Type.Boolean({ default: true }),
        threshold_bytes: Type.Integer({ minimum: 1024, default: 32_768 }),
        excerpt_bytes: Type.Integer({ minimum: 512, default: 6_144 }),
      },
      { additionalProperties: false, default: {} },
    ),
    schedules: Type.Array(
      Type.Object(
        {
          id: Type.String({ minLength: 1 }),
          cron: Type.String({ minLength: 1 }),
          prompt: Type.String({ minLength: 1 }),
        },
        { additionalProperties: false },
      ),
      { default: [] },
    ),
    log_level: logLevelSchema,
  },
  { additionalProperties: false },
);

export type LoopdConfig = Static<typeof loopdConfigSchema>;
export type ScheduleConfig = LoopdConfig["schedules"][number];
