import {
  DEFAULT_DIRS,
  DEFAULT_SAMPLING,
  DEFAULT_SOCKETS,
  LLAMA_CONTRACT,
  MAX_TOKENS_PER_REQUEST,
  logLevelSchema,
  type Static,
  StringEnum,
  Type,
} from "@boxmaker/common";

const positive = (def: number) => Type.Integer({ minimum: 1, default: def });
const sha256 = (options = {}) => Type.String({ pattern: "^[0-9a-f]{64}$", ...options });

/**
 * The one schema for inferproxy's config file: keys, types and production
 * defaults, the shared ones from common's stack-defaults; `InferproxyConfig`
 * is its static type. Sampling defaults are the harness's, not the server's
 * (the server would use temperature 1.0 and min_p 0.05).
 */
export const configSchema = Type.Object(
  {
    socket: Type.String({ minLength: 1, default: DEFAULT_SOCKETS.inferproxy }),
    // Where llama-server listens: its Unix socket in production, a TCP URL for development.
    upstream: Type.Object(
      {
        socket_path: Type.Optional(Type.String({ minLength: 1 })),
        url: Type.Optional(Type.String({ pattern: "^https?://" })),
      },
      // Exactly one of the two: a socket and a URL together would leave which one is used to chance.
      {
        additionalProperties: false,
        default: { socket_path: DEFAULT_SOCKETS.llama },
        minProperties: 1,
        maxProperties: 1,
      },
    ),
    sampling: Type.Object(
      {
        temperature: Type.Number({ minimum: 0, default: DEFAULT_SAMPLING.temperature }),
        top_p: Type.Number({ minimum: 0, maximum: 1, default: DEFAULT_SAMPLING.top_p }),
        top_k: Type.Integer({ minimum: 0, default: DEFAULT_SAMPLING.top_k }),
        min_p: Type.Number({ minimum: 0, maximum: 1, default: DEFAULT_SAMPLING.min_p }),
      },
      { additionalProperties: false, default: {} },
    ),
    // For a caller that sends none; loopd always sends its own (the same default, lowered to the turn's budget).
    max_tokens: positive(MAX_TOKENS_PER_REQUEST),
    liveness_timeout_ms: positive(5000),
    // Time limit for the short non-streaming calls: /props, /slots, /health, control.
    request_timeout_ms: positive(10000),
    // Slot save/restore moves the whole KV cache of a slot through the disk; allow for it.
    slot_action_timeout_ms: positive(120000),
    // What the start-up self-test expects of llama-server (docs/contract.md).
    contract: Type.Object(
      {
        template_sha256: sha256({ default: LLAMA_CONTRACT.templateSha256 }),
        n_ctx_per_slot: positive(LLAMA_CONTRACT.nCtxPerSlot),
        total_slots: positive(LLAMA_CONTRACT.slots),
      },
      { additionalProperties: false, default: {} },
    ),
    // The contract table: one entry per model the operator runs (keyed as contract-model.ts says), written by
    // `boxmaker contract accept`. A model with no entry is held to `contract` above.
    contracts: Type.Array(
      Type.Object(
        {
          model: Type.String({ minLength: 1 }),
          template_sha256: sha256(),
          n_ctx_per_slot: Type.Integer({ minimum: 1 }),
          total_slots: Type.Integer({ minimum: 1 }),
          // What the template probe said when the entry was accepted (ok | warn), for the record.
          probe_verdict: StringEnum(["ok", "warn", ""], { default: "" }),
        },
        { additionalProperties: false },
      ),
      { default: [] },
    ),
    health_poll_ms: Type.Integer({ minimum: 10, default: 2000 }),
    // llama-server's --slot-save-path as seen from here: parked session caches live there, and only
    // inferproxy, beside the server, can erase them. "" when the server runs elsewhere (nothing is erased).
    slot_files: Type.Object(
      {
        dir: Type.String({ default: DEFAULT_DIRS.slotSave }),
        // After each save the least recently used parked caches are erased until the total fits. 32 GiB:
        // a few whole slots at 131k tokens (each file is n_saved × the model's KV bytes per token).
        max_bytes: Type.Integer({ minimum: 0, default: 32 * 1024 ** 3 }),
      },
      { additionalProperties: false, default: {} },
    ),
    log_level: logLevelSchema,
  },
  { additionalProperties: false },
);

export type InferproxyConfig = Static<typeof configSchema>;
export type UpstreamConfig = InferproxyConfig["upstream"];
export type SamplingConfig = InferproxyConfig["sampling"];
export type ContractConfig = InferproxyConfig["contract"];
export type ContractEntry = InferproxyConfig["contracts"][number];

/** A printable name for the upstream, used in logs, Status and error messages. */
export function upstreamLabel(u: UpstreamConfig): string {
  return u.url ?? `unix:${u.socket_path}`;
}
