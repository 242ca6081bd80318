import type { SchemaObject } from "ajv";
import { logLevelSchema, type ConfigSchema } from "@boxmaker/common";

/**
 * The one schema for inferproxy's config file: keys, types and production
 * defaults. Sampling defaults are the harness's, not the server's (the server
 * would use temperature 1.0 and min_p 0.05).
 */
const schema = {
  type: "object",
  additionalProperties: false,
  properties: {
    socket: { type: "string", minLength: 1, default: "/run/boxmaker/inferproxy.sock" },
    // Where llama-server listens: its Unix socket in production, a TCP URL for development.
    upstream: {
      type: "object",
      additionalProperties: false,
      default: { socket_path: "/run/boxmaker/llama.sock" },
      properties: {
        socket_path: { type: "string", minLength: 1, nullable: true },
        url: { type: "string", pattern: "^https?://", nullable: true },
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
        temperature: { type: "number", minimum: 0, default: 0.6 },
        top_p: { type: "number", minimum: 0, maximum: 1, default: 0.95 },
        top_k: { type: "integer", minimum: 0, default: 20 },
        min_p: { type: "number", minimum: 0, maximum: 1, default: 0 },
      },
      required: [],
    },
    max_tokens: { type: "integer", minimum: 1, default: 32768 },
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
        template_sha256: {
          type: "string",
          pattern: "^[0-9a-f]{64}$",
          default: "f55f52930aa8bf44ab5cb85f99370fcc3c56e9a85640b812086d5330bce5d86b",
        },
        n_ctx_per_slot: { type: "integer", minimum: 1, default: 131072 },
        total_slots: { type: "integer", minimum: 1, default: 3 },
      },
      required: [],
    },
    health_poll_ms: { type: "integer", minimum: 10, default: 2000 },
    log_level: logLevelSchema,
  },
  required: [],
} as const satisfies SchemaObject;

/**
 * The TS type of what `parseConfig` returns for a schema of the shapes used
 * here: a key with a `default` is always present after parsing (ajv fills it),
 * a key without one is optional; `nullable` lets a file say null. Derived, so
 * the type cannot drift from the schema ajv enforces.
 */
type Parsed<S> = S extends { nullable: true } ? NonNull<S> | null : NonNull<S>;
type NonNull<S> = S extends { enum: readonly (infer E)[] }
  ? E
  : S extends { type: "string" }
    ? string
    : S extends { type: "number" | "integer" }
      ? number
      : S extends { type: "object"; properties: infer P }
        ? ParsedObject<P>
        : never;
type ParsedObject<P> = {
  -readonly [K in keyof P as P[K] extends { default: unknown } ? K : never]: Parsed<P[K]>;
} & {
  -readonly [K in keyof P as P[K] extends { default: unknown } ? never : K]?: Parsed<P[K]>;
} extends infer O
  ? { [K in keyof O]: O[K] }
  : never;

export type InferproxyConfig = Parsed<typeof schema>;
export type UpstreamConfig = InferproxyConfig["upstream"];
export type SamplingConfig = InferproxyConfig["sampling"];
export type ContractConfig = InferproxyConfig["contract"];

export const configSchema: ConfigSchema<InferproxyConfig> = schema;

/** A printable name for the upstream, used in logs, Status and error messages. */
export function upstreamLabel(u: UpstreamConfig): string {
  return u.url ?? `unix:${u.socket_path}`;
}
