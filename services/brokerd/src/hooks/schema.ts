import type { SchemaObject } from "ajv";
import { HOOK_EVENTS } from "./types.js";

/**
 * The `hooks` object, for brokerd's config and for a project's hook file.
 * A project file cannot say `unsandboxed`: whatever a person trusts there runs in bwrap.
 */
export function hooksSchema(origin: "operator" | "project"): SchemaObject {
  const hook: SchemaObject = {
    type: "object",
    additionalProperties: false,
    properties: {
      name: { type: "string", minLength: 1, maxLength: 64, nullable: true },
      command: { type: "string", minLength: 1, maxLength: 16_384 },
      match: { type: "array", items: { type: "string", minLength: 1 }, nullable: true },
      timeout_ms: { type: "integer", minimum: 1, maximum: 600_000, default: 30_000 },
      output_cap_bytes: { type: "integer", minimum: 1, maximum: 1024 * 1024, default: 8 * 1024 },
      ...(origin === "operator" ? { unsandboxed: { type: "boolean", default: false } } : {}),
    },
    required: ["command", "timeout_ms", "output_cap_bytes"],
  };
  return {
    type: "object",
    additionalProperties: false,
    default: {},
    properties: Object.fromEntries(HOOK_EVENTS.map((e) => [e, { type: "array", items: hook, nullable: true }])),
    required: [],
  };
}
