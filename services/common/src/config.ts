import { readFileSync } from "node:fs";
import { BoxmakerError, messageOf } from "./errors.js";
import { Ajv, type ErrorObject, type JSONSchemaType, type SchemaObject, type ValidateFunction } from "ajv";

/**
 * A daemon's config schema. `JSONSchemaType<T>` where it fits; a plain schema
 * object where ajv's type cannot express it (e.g. `default: {}` on an object
 * whose keys all have defaults), with T given explicitly.
 */
export type ConfigSchema<T> = JSONSchemaType<T> | SchemaObject;
/** A schema object as ajv takes it: what a daemon's `const` config schema `satisfies`. */
export type { SchemaObject };

/**
 * The TS type of what `parseConfig` returns for a schema of the shapes the
 * daemons' configs use: a key with a `default`, or listed in `required`, is
 * always present after parsing (ajv fills defaults); any other key is
 * optional; `nullable` lets a file say null. Derived from the schema written
 * `as const`, so the type cannot drift from what ajv enforces.
 */
export type ConfigOf<S> = S extends { nullable: true } ? NonNull<S> | null : NonNull<S>;
type NonNull<S> = S extends { enum: readonly (infer E)[] }
  ? E
  : S extends { type: "string" }
    ? string
    : S extends { type: "number" | "integer" }
      ? number
      : S extends { type: "boolean" }
        ? boolean
        : S extends { type: "array"; items: infer I }
          ? ConfigOf<I>[]
          : S extends { type: "object"; properties: infer P }
            ? ParsedObject<P, S extends { required: readonly (infer R)[] } ? R : never>
            : never;
type Present<V, K, R> = V extends { default: unknown } ? true : K extends R ? true : false;
type ParsedObject<P, R> = {
  -readonly [K in keyof P as Present<P[K], K, R> extends true ? K : never]: ConfigOf<P[K]>;
} & {
  -readonly [K in keyof P as Present<P[K], K, R> extends true ? never : K]?: ConfigOf<P[K]>;
} extends infer O
  ? { [K in keyof O]: O[K] }
  : never;

/** pino's levels; every daemon's config has `log_level` with this schema. */
export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
export const logLevelSchema = {
  type: "string",
  enum: ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
  default: "info",
} as const;

/** A config file that cannot be used; the message is one line naming the bad key. */
export class ConfigError extends BoxmakerError {
  constructor(message: string, options?: ErrorOptions) {
    super("CONFIG_INVALID", message, options);
  }
}

const ajv = new Ajv({ useDefaults: true, allErrors: false, strict: true, allowUnionTypes: true });
const compiled = new WeakMap<object, ValidateFunction>();

function keyOf(err: ErrorObject): string {
  const base = err.instancePath.replace(/^\//, "").replace(/\//g, ".");
  if (err.keyword === "additionalProperties") {
    const extra = (err.params as { additionalProperty: string }).additionalProperty;
    return base ? `${base}.${extra}` : extra;
  }
  if (err.keyword === "required") {
    const missing = (err.params as { missingProperty: string }).missingProperty;
    return base ? `${base}.${missing}` : missing;
  }
  return base || "(root)";
}

function describe(err: ErrorObject): string {
  if (err.keyword === "additionalProperties") return "is not a known setting";
  if (err.keyword === "required") return "is required";
  return err.message ?? "is invalid";
}

/**
 * Validates plain data against a daemon's config schema, filling defaults.
 * The schema is the one source of truth for keys, types and defaults.
 */
export function parseConfig<T>(schema: ConfigSchema<T>, data: unknown, source = "config"): T {
  let validate = compiled.get(schema) as ValidateFunction<T> | undefined;
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  if (data === undefined) data = {};
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new ConfigError(
      `${source}: the config must be one JSON object, not ${data === null ? "null" : Array.isArray(data) ? "an array" : typeof data}`,
    );
  }
  const copy = structuredClone(data);
  if (!validate(copy)) {
    const err = validate.errors![0]!;
    throw new ConfigError(`${source}: key "${keyOf(err)}" ${describe(err)}`);
  }
  return copy as T;
}

/** The longest Unix socket path the kernel binds without cutting it (sun_path is 108 bytes with its NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Refuses a socket path the kernel would truncate (the daemon would listen somewhere else). */
export function checkSocketPath(path: string, key = "socket"): void {
  const n = Buffer.byteLength(path);
  if (n > MAX_SOCKET_PATH_BYTES) {
    throw new ConfigError(
      `key "${key}": the socket path ${path} is ${n} bytes; Unix socket paths are limited to ${MAX_SOCKET_PATH_BYTES} bytes, use a shorter directory`,
    );
  }
}

/** Reads a JSON config file; no path means all defaults. */
export function loadConfig<T>(schema: ConfigSchema<T>, path: string | undefined): T {
  if (!path) return parseConfig(schema, {}, "defaults");
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(`${path}: cannot read: ${messageOf(err)}`, { cause: err });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${path}: not valid JSON: ${messageOf(err)}`, { cause: err });
  }
  return parseConfig(schema, data, path);
}

/** `--config PATH` from argv, else the daemon's environment variable. */
export function configPathFromArgs(argv: readonly string[], envVar: string): string | undefined {
  const i = argv.indexOf("--config");
  if (i >= 0) return argv[i + 1];
  const eq = argv.find((a) => a.startsWith("--config="));
  if (eq) return eq.slice("--config=".length);
  return process.env[envVar] || undefined;
}
