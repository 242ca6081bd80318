import {
  DEFAULT_DIRS,
  DEFAULT_SAMPLING,
  DEFAULT_SOCKETS,
  LLAMA_CONTRACT,
  MAX_TOKENS_PER_REQUEST,
  logLevelSchema,
  type ConfigSchema,
  type SchemaObject,
  type ConfigOf,
} from "@boxmaker/common";

/**
 * The one schema for inferproxy's config file: keys, types and production
 * defaults, the shared ones from common's stack-defaults. Sampling defaults are
 * the harness's, not the server's (the server would use temperature 1.0 and
 * min_p 0.05).
 */
const schema = {
  type: "object",
  additionalProperties: false,
  properties: {
    socket: { type: "string", minLength: 1, default: DEFAULT_SOCKETS.inferproxy },
    // Where llama-server listens: its Unix socket in production, a TCP URL for development.
    upstream: {
      type: "object",
      additionalProperties: false,
      default: { socket_path: DEFAULT_SOCKETS.llama },
      properties: {
        socket_path: { type: "string", minLength: 1 },
        url: { type: "string", pattern: "^https?://" },
      },
      // Exactly one of the two: a socket and a URL together would leave which one is used to chance.
      minProperties: 1,
      maxProperties: 1,
    },
    sampling: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        temperature: { type: "number", minimum: 0, default: DEFAULT_SAMPLING.temperature },
        top_p: { type: "number", minimum: 0, maximum: 1, default: DEFAULT_SAMPLING.top_p },
        top_k: { type: "integer", minimum: 0, default: DEFAULT_SAMPLING.top_k },
        min_p: { type: "number", minimum: 0, maximum: 1, default: DEFAULT_SAMPLING.min_p },
      },
      required: [],
    },
    // For a caller that sends none; loopd always sends its own (the same default, lowered to the turn's budget).
    max_tokens: { type: "integer", minimum: 1, default: MAX_TOKENS_PER_REQUEST },
    liveness_timeout_ms: { type: "integer", minimum: 1, default: 5000 },
    // Time limit for the short non-streaming calls: /props, /slots, /health, control.
    request_timeout_ms: { type: "integer", minimum: 1, default: 10000 },
    // Slot save/restore moves the whole KV cache of a slot through the disk; allow for it.
    slot_action_timeout_ms: { type: "integer", minimum: 1, default: 120000 },
    // What the start-up self-test expects of llama-server (docs/contract.md).
    contract: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        template_sha256: { type: "string", pattern: "^[0-9a-f]{64}$", default: LLAMA_CONTRACT.templateSha256 },
        n_ctx_per_slot: { type: "integer", minimum: 1, default: LLAMA_CONTRACT.nCtxPerSlot },
        total_slots: { type: "integer", minimum: 1, default: LLAMA_CONTRACT.slots },
      },
      required: [],
    },
    // The contract table: one entry per model the operator runs (keyed as contract-model.ts says), written by
    // `boxmaker contract accept`. A model with no entry is held to `contract` above.
    contracts: {
      type: "array",
      default: [],
      items: {
        type: "object",
        additionalProperties: false,
        properties: {
          model: { type: "string", minLength: 1 },
          template_sha256: { type: "string", pattern: "^[0-9a-f]{64}$" },
          n_ctx_per_slot: { type: "integer", minimum: 1 },
          total_slots: { type: "integer", minimum: 1 },
          // What the template probe said when the entry was accepted (ok | warn), for the record.
          probe_verdict: { type: "string", enum: ["ok", "warn", ""], default: "" },
        },
        required: ["model", "template_sha256", "n_ctx_per_slot", "total_slots"],
      },
    },
    health_poll_ms: { type: "integer", minimum: 10, default: 2000 },
    // llama-server's --slot-save-path as seen from here: parked session caches live there, and only
    // inferproxy, beside the server, can erase them. "" when the server runs elsewhere (nothing is erased).
    slot_files: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        dir: { type: "string", default: DEFAULT_DIRS.slotSave },
        // After each save the least recently used parked caches are erased until the total fits. 32 GiB:
        // a few whole slots at 131k tokens (each file is n_saved × the model's KV bytes per token).
        max_bytes: { type: "integer", minimum: 0, default: 32 * 1024 ** 3 },
      },
      required: [],
    },
    log_level: logLevelSchema,
  },
  required: [],
} as const satisfies SchemaObject;

export type InferproxyConfig = ConfigOf<typeof schema>;
export type UpstreamConfig = InferproxyConfig["upstream"];
export type SamplingConfig = InferproxyConfig["sampling"];
export type ContractConfig = InferproxyConfig["contract"];
export type ContractEntry = InferproxyConfig["contracts"][number];

export const configSchema: ConfigSchema<InferproxyConfig> = schema;

/** A printable name for the upstream, used in logs, Status and error messages. */
export function upstreamLabel(u: UpstreamConfig): string {
  return u.url ?? `unix:${u.socket_path}`;
}
