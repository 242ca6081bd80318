import { BLOB_PREFIX } from "./blobs.js";
import { excerpt } from "./excerpt.js";
import type { ResultSecrets } from "./secrets/result-secrets.js";
import type { Plan, ToolDef } from "./tool-table.js";

export interface Capped {
  text: string;
  /** The sha256 of the blob holding the whole result, when it was capped. */
  blob?: string;
}

/** The tools a capped result's note points at: the session may call them from now on. */
export const BLOB_READERS = ["read_blob", "grep_blob"] as const;

/**
 * Above `capBytes` the whole result goes to the blob store and the model gets
 * a verbatim excerpt plus the pointer, with the call_tool shapes that read it.
 * Pure but for `store`.
 */
export function capResult(
  text: string,
  opts: { tool: string; selfCapped?: boolean; capBytes: number; store: (text: string) => string },
): Capped {
  const bytes = Buffer.byteLength(text);
  const cap = opts.capBytes;
  // Results a tool bounds itself (read_blob) must not be turned into another blob.
  if (opts.selfCapped || bytes <= cap) return { text };
  const hash = opts.store(text);
  const ref = `${BLOB_PREFIX}${hash}`;
  const ex = excerpt(text, Math.max(256, cap - 700));
  const shown = ex.kind === "errors" ? "the error lines with context and the end" : "the start and the end";
  const note =
    `[${opts.tool} result: ${bytes} bytes, ${ex.lines} lines; showing ${shown}. The full result is stored as ${ref}. ` +
    `Read more with call_tool({"name": "read_blob", "arguments": {"blob": "${ref}", "start_line": 1, "end_line": 200}}) ` +
    `or call_tool({"name": "grep_blob", "arguments": {"blob": "${ref}", "pattern": "…"}}).]`;
  return { text: `${note}\n${ex.text}`, blob: hash };
}

/** What capping needs from the broker: the cap, the store, the session's disclosure of the readers, the masker. */
export interface CapDeps {
  readonly secrets: ResultSecrets;
  readonly config: { readonly result_cap_bytes: number };
  readonly blobs: { put(text: string): string };
  readonly disclosure: { disclose(session: string, names: Iterable<string>): void };
}

/**
 * What every tool result passes on its way to a session (a call the policy
 * allowed, or one a person approved): secrets recognised by content are masked
 * first, so neither the model, the blob store, a hook nor the session log
 * ever holds them, then the result is capped. When it went to a blob, or the
 * tool's own text points at one, the session may read it with call_tool at once.
 */
export function capForSession(
  d: CapDeps,
  session: string,
  tool: ToolDef,
  plan: Plan | undefined,
  raw: string,
  discloses: readonly string[] = [],
): Capped {
  const text = d.secrets.mask(tool, plan, raw);
  const capped = capResult(text, {
    tool: tool.name,
    ...(tool.selfCapped ? { selfCapped: true } : {}),
    capBytes: d.config.result_cap_bytes,
    store: (t) => d.blobs.put(t),
  });
  if (capped.blob) d.disclosure.disclose(session, BLOB_READERS);
  if (discloses.length) d.disclosure.disclose(session, discloses);
  return capped;
}
