import type { JSONSchemaType } from "ajv";
import { logLevelSchema, type LogLevel } from "@boxmaker/common";

/** Where llama-server listens: its Unix socket in production, a TCP URL for development. */
export interface UpstreamConfig {
  socket_path?: string;
  url?: string;
}

export interface SamplingConfig {
  temperature: number;
  top_p: number;
  top_k: number;
  min_p: number;
}

/** What the start-up self-test expects of llama-server (docs/contract.md). */
export interface ContractConfig {
  template_sha256: string;
  n_ctx_per_slot: number;
  total_slots: number;
}

export interface InferproxyConfig {
  socket: string;
  upstream: UpstreamConfig;
  sampling: SamplingConfig;
  max_tokens: number;
  liveness_timeout_ms: number;
  /** Time limit for the short non-streaming calls: /props, /slots, /health, control. */
  request_timeout_ms: number;
  /** Slot save/restore moves the whole KV cache of a slot through the disk; allow for it. */
  slot_action_timeout_ms: number;
  contract: ContractConfig;
  health_poll_ms: number;
  log_level: LogLevel;
}

/**
 * The one schema for inferproxy's config file: keys, types and production
 * defaults. Sampling defaults are the harness's, not the server's (the server
 * would use temperature 1.0 and min_p 0.05).
 */
export const configSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    socket: { type: "string", minLength: 1, default: "/run/boxmaker/inferproxy.sock" },
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
    request_timeout_ms: { type: "integer", minimum: 1, default: 10000 },
    slot_action_timeout_ms: { type: "integer", minimum: 1, default: 120000 },
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
} as unknown as JSONSchemaType<InferproxyConfig>;

/** A printable name for the upstream, used in logs, Status and error messages. */
export function upstreamLabel(u: UpstreamConfig): string {
  return u.url ?? `unix:${u.socket_path}`;
}
