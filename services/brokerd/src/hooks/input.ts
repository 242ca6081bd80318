import type { HookInput } from "./types.js";

/** Each string in a hook's input is cut here: a hook needs the shape of a call, not a whole file's content. */
const MAX_STRING = 2048;
/**
 * The sandbox passes the input as one argument word, which the kernel caps at
 * 128 KiB; quoting can grow it fourfold (every `'` becomes four bytes).
 */
const MAX_INPUT = 24 * 1024;

function shorten(v: unknown, depth = 0): unknown {
  if (typeof v === "string")
    return v.length > MAX_STRING ? `${v.slice(0, MAX_STRING)}…[${v.length - MAX_STRING} more characters]` : v;
  if (depth > 16 || v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map((x) => shorten(x, depth + 1));
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shorten(x, depth + 1)]));
}

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

/** The input as a hook reads it: strings cut, and the arguments left out when even that is too large. */
export function hookInput(input: HookInput): HookInput {
  const out: HookInput = { ...input };
  if (out.arguments !== undefined) out.arguments = shorten(out.arguments);
  if (out.result_excerpt !== undefined) out.result_excerpt = shorten(out.result_excerpt) as string;
  if (out.notification)
    out.notification = { ...out.notification, message: shorten(out.notification.message) as string };
  if (bytes(out) > MAX_INPUT) out.arguments = { omitted: `the arguments are larger than ${MAX_INPUT} bytes` };
  if (bytes(out) > MAX_INPUT) out.result_excerpt = "";
  return out;
}
