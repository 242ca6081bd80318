import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { BoxmakerError, messageOf } from "./errors.js";
import { Ajv, type ErrorObject, type JSONSchemaType, type SchemaObject, type ValidateFunction } from "ajv";
import { type Static, StringEnum, type TSchema } from "./typed-schema.js";

/**
 * A config schema as ajv takes it. The daemons' own are TypeBox schemas
 * (typed-schema.ts), whose static type is what parseConfig returns; a plain
 * schema object needs the type given where it is parsed.
 */
export type ConfigSchema<T> = JSONSchemaType<T> | SchemaObject;
export type { SchemaObject };
export * from "./typed-schema.js";

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
/** pino's levels; every daemon's config has `log_level` with this schema. */
export const logLevelSchema = StringEnum(LOG_LEVELS, { default: "info" });
export type LogLevel = Static<typeof logLevelSchema>;

/** A config file that cannot be used; the message is one line naming the bad key. */
export class ConfigError extends BoxmakerError {
  constructor(message: string, options?: ErrorOptions) {
    super("CONFIG_INVALID", oneLine(message), options);
  }
}

const MAX_MESSAGE_CHARS = 1_000;
const MAX_ECHO_CHARS = 200;

/**
 * The message as one line of bounded length: it echoes what the file says (a
 * key, a path), and a key with a newline or 5,000 characters in it must not
 * turn the one line systemd shows into several or into a wall of text.
 */
export function oneLine(message: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this escapes.
  const escaped = message.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, (c) =>
    c === "\n" ? "\\n" : c === "\t" ? "\\t" : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return escaped.length > MAX_MESSAGE_CHARS ? `${escaped.slice(0, MAX_MESSAGE_CHARS)}…` : escaped;
}

/** A piece of the file's own text in a message: a key or value, cut to a readable length. */
const echo = (s: string) => (s.length > MAX_ECHO_CHARS ? `${s.slice(0, MAX_ECHO_CHARS)}…` : s);

const ajv = new Ajv({ useDefaults: true, allErrors: false, strict: true, allowUnionTypes: true });
const compiled = new WeakMap<object, ValidateFunction>();

function keyOf(err: ErrorObject): string {
  return echo(rawKeyOf(err));
}

function rawKeyOf(err: ErrorObject): string {
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
export function parseConfig<S extends TSchema>(schema: S, data: unknown, source?: string): Static<S>;
export function parseConfig<T>(schema: ConfigSchema<T>, data: unknown, source?: string): T;
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
  // Before anything recursive (structuredClone, ajv) meets it: nesting deep
  // enough overflows the stack, a RangeError and a stack trace instead of a line.
  checkDepth(data, source);
  const copy = structuredClone(data);
  if (!validate(copy)) {
    const err = validate.errors![0]!;
    throw new ConfigError(`${source}: key "${keyOf(err)}" ${describe(err)}`);
  }
  checkValues(copy, schema as SchemaObject, [], false, source);
  return copy as T;
}

/** No config of the stack nests deeper than this; a file that does is not a config. */
const MAX_DEPTH = 32;

function checkDepth(data: object, source: string): void {
  const stack: Array<{ v: unknown; path: string[] }> = [{ v: data, path: [] }];
  while (stack.length) {
    const { v, path } = stack.pop()!;
    if (path.length > MAX_DEPTH) {
      throw new ConfigError(
        `${source}: key "${echo(path.slice(0, 8).join("."))}…" nests deeper than ${MAX_DEPTH} levels`,
      );
    }
    if (v && typeof v === "object") for (const [k, c] of Object.entries(v)) stack.push({ v: c, path: [...path, k] });
  }
}

/** Node's timers take at most this (24.8 days); a longer delay fires at once, with only a warning. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * What a schema per key would repeat at every key, held by convention across
 * the stack's configs: no number beyond 2^53 (past it integers are not exact),
 * a `*_ms` key is a delay a timer waits (so at most MAX_TIMER_MS), and a
 * `socket`, `*_socket` or `socket_path` key is a Unix socket path (so at most
 * MAX_SOCKET_PATH_BYTES), for the sockets a daemon connects to as much as the
 * one it listens on. The conventions hold for keys the schema names, not for
 * the keys of a map (an MCP server's env may have a FOO_socket of its own).
 */
function checkValues(
  v: unknown,
  schema: SchemaObject | undefined,
  path: string[],
  named: boolean,
  source: string,
): void {
  const key = named ? (path.at(-1) ?? "") : "";
  const at = () => `${source}: key "${echo(path.join("."))}"`;
  if (typeof v === "number") {
    if (Math.abs(v) > Number.MAX_SAFE_INTEGER) {
      throw new ConfigError(`${at()}: ${v} is out of range (at most ${Number.MAX_SAFE_INTEGER})`);
    }
    if (key.endsWith("_ms") && v > MAX_TIMER_MS) {
      throw new ConfigError(`${at()}: ${v} ms is longer than a timer can wait (at most ${MAX_TIMER_MS} ms, 24.8 days)`);
    }
  } else if (typeof v === "string") {
    if (key === "socket" || key.endsWith("_socket") || key === "socket_path") checkSocketPath(v, path.join("."));
  } else if (Array.isArray(v)) {
    const items = typeof schema?.items === "object" ? (schema.items as SchemaObject) : undefined;
    for (const [i, c] of v.entries()) checkValues(c, items, [...path, String(i)], false, source);
  } else if (v && typeof v === "object") {
    const props = (schema?.properties ?? {}) as Record<string, SchemaObject>;
    const rest =
      typeof schema?.additionalProperties === "object" ? (schema.additionalProperties as SchemaObject) : undefined;
    for (const [k, c] of Object.entries(v)) {
      const own = Object.hasOwn(props, k);
      checkValues(c, own ? props[k] : rest, [...path, k], own, source);
    }
  }
}

/** The longest Unix socket path the kernel binds without cutting it (sun_path is 108 bytes with its NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Refuses a socket path the kernel would truncate (the daemon would listen somewhere else). */
export function checkSocketPath(path: string, key = "socket"): void {
  const n = Buffer.byteLength(path);
  if (n > MAX_SOCKET_PATH_BYTES) {
    throw new ConfigError(
      `key "${echo(key)}": the socket path ${echo(path)} is ${n} bytes; Unix socket paths are limited to ${MAX_SOCKET_PATH_BYTES} bytes, use a shorter directory`,
    );
  }
}

/** Larger than any config; a file this size is something else given by mistake. */
const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/**
 * The file's text, refused unless it is a regular file of UTF-8 under
 * MAX_CONFIG_BYTES. Opened without blocking and checked before reading: a
 * FIFO (or a symlink to one) would block the read forever and /dev/zero
 * never end it; a decoding that replaced bad bytes would start the daemon on
 * a path or prompt nobody wrote.
 */
function readConfigText(path: string): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    throw new ConfigError(`${path}: cannot read: ${messageOf(err)}`, { cause: err });
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new ConfigError(`${path}: is a directory, not a config file`);
    if (!st.isFile())
      throw new ConfigError(`${path}: is not a regular file (a FIFO, socket or device), not a config file`);
    if (st.size > MAX_CONFIG_BYTES) {
      throw new ConfigError(`${path}: is ${st.size} bytes; a config file is at most ${MAX_CONFIG_BYTES} bytes`);
    }
    let bytes: Buffer;
    try {
      bytes = readFileSync(fd);
    } catch (err) {
      throw new ConfigError(`${path}: cannot read: ${messageOf(err)}`, { cause: err });
    }
    try {
      // ignoreBOM keeps a byte-order mark in the text, where JSON.parse refuses it as before.
      return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
    } catch (err) {
      throw new ConfigError(`${path}: is not UTF-8 text`, { cause: err });
    }
  } finally {
    closeSync(fd);
  }
}

/** Reads a JSON config file; no path means all defaults. */
export function loadConfig<S extends TSchema>(schema: S, path: string | undefined): Static<S>;
export function loadConfig<T>(schema: ConfigSchema<T>, path: string | undefined): T;
export function loadConfig<T>(schema: ConfigSchema<T>, path: string | undefined): T {
  if (path === undefined) return parseConfig<T>(schema, {}, "defaults");
  if (path === "") throw new ConfigError("the config path is empty (--config needs a file)");
  const text = readConfigText(path);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${path}: not valid JSON: ${messageOf(err)}`, { cause: err });
  }
  return parseConfig<T>(schema, data, path);
}

/**
 * Creates a directory the config names (and its parents), or says in one line
 * why it cannot. One component at a time, not mkdirSync's `recursive`: under
 * /proc that retries ENOENT forever and the daemon hangs at start.
 */
export function makeConfiguredDir(dir: string, key: string, mode = 0o750): void {
  const parts = resolve(dir).split("/").filter(Boolean);
  let at = "";
  for (const part of parts) {
    at += `/${part}`;
    try {
      mkdirSync(at, { mode });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EEXIST" && statSync(at, { throwIfNoEntry: false })?.isDirectory()) continue;
      const why = code === "EEXIST" ? `${at} is not a directory` : messageOf(err);
      throw new ConfigError(`key "${key}": cannot create ${dir}: ${why}`, { cause: err });
    }
  }
}
