import { type Static, type TSchema, type TUnsafe, Type } from "@sinclair/typebox";

/**
 * TypeBox builds a JSON Schema and its static type from one declaration: the
 * schema is what ajv validates (a daemon's config, a tool's arguments), the
 * type what the code reads after validation, so neither is written twice.
 * TypeBox marks its schemas with symbol keys, which JSON.stringify and ajv
 * never see.
 */
export { Type, type Static, type TSchema };

/**
 * A string from a fixed list, emitted as JSON Schema's `enum`. TypeBox's own
 * union of literals is `anyOf` of `const`s: the same set, but another schema
 * in the prompt (a tool's parameters are part of the prompt prefix) and other
 * error messages in a config.
 */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  options: Record<string, unknown> = {},
): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: "string", enum: values, ...options });
}

/**
 * An object whose keys are names the file chooses (an MCP server's env, a
 * host map), each value of one schema, as `additionalProperties`: TypeBox's
 * Record says the same with `patternProperties`, which the config checks
 * (common/config.ts) would not follow into.
 */
export function MapOf<T extends TSchema>(
  value: T,
  options: Record<string, unknown> = {},
): TUnsafe<Record<string, Static<T>>> {
  return Type.Unsafe<Record<string, Static<T>>>({ type: "object", additionalProperties: value, ...options });
}

/**
 * An optional key that may also say null (ajv's `nullable`): typed with the
 * null, so code reading it handles what a file can really hold.
 */
export function Nullable<T extends TSchema>(schema: T) {
  return Type.Optional(Type.Unsafe<Static<T> | null>({ ...schema, nullable: true }));
}
