import { createHash } from "node:crypto";
import { LLAMA_CONTRACT, llamaServerArgs as contractLlamaServerArgs } from "@boxmaker/common/lite";
import { UsageError } from "../errors.js";
import type { Layout } from "./layout.js";

/**
 * The daemons' config files for `boxmaker up`. Only keys that differ from the
 * schema defaults are written (services/<daemon>/src/config.ts stays the one
 * source of truth for everything else), so a schema default changing never
 * needs a change here.
 */

export type Upstream =
  | { kind: "llama-server"; bin: string; model: string; extraArgs: string[] }
  | { kind: "llama-sim" /** Scripted replies for the simulator (`boxmaker demo`). */; script?: string }
  | { kind: "socket"; path: string }
  | { kind: "url"; url: string };

/** What inferproxy's self-test compares with the server's /props. */
export interface Contract {
  template_sha256: string;
  n_ctx_per_slot: number;
  total_slots: number;
}

export interface StackSettings {
  workspaceRoots: string[];
  /** "none" runs tools unsandboxed: for machines without user namespaces (some containers, CI). */
  sandbox: { mode: "bwrap"; bwrapPath: string } | { mode: "none" };
  logLevel: string;
  /** Absent: inferproxy's own defaults, i.e. the production contract. */
  contract?: Contract;
  /** Deep-merged over the generated files (--overrides FILE): policy, MCP servers, budgets, schedules. */
  overrides?: { inferproxy?: JsonObject; brokerd?: JsonObject; loopd?: JsonObject };
}

export type JsonObject = { [key: string]: unknown };

/** The simulator's size: small enough for CI, the same slot count as production. */
const SIM_N_CTX_PER_SLOT = 32_768;

/**
 * llama-server's flags: the contract's (common's stack-defaults), with this
 * stack's socket and slot dir. deploy/systemd/boxmaker-llama-server.service and
 * nix/lib.nix follow the same list (test/deploy/configs.test.ts checks).
 */
export function llamaServerArgs(layout: Layout, model: string, extraArgs: readonly string[] = []): string[] {
  return contractLlamaServerArgs({ socket: layout.sockets.llama, model, slotSavePath: layout.slotDir, extraArgs });
}

export function llamaSimArgs(layout: Layout, script?: string): string[] {
  return [
    "--socket",
    layout.sockets.llama,
    "--slots",
    String(LLAMA_CONTRACT.slots),
    "--n-ctx",
    String(SIM_N_CTX_PER_SLOT),
    "--slot-save-path",
    layout.slotDir,
    ...(script ? ["--script", script] : []),
  ];
}

/** Whether the upstream is known to have a slot save path, which session parking needs (`up` started it with one). */
export function upstreamCanPark(u: Upstream): boolean {
  return u.kind === "llama-server" || u.kind === "llama-sim";
}

/** A contract that accepts whatever server answered /props: for the simulator and development servers. */
export function contractFromProps(props: unknown): Contract {
  const p = props as {
    chat_template?: unknown;
    total_slots?: unknown;
    default_generation_settings?: { n_ctx?: unknown };
  };
  const template = p?.chat_template;
  const nCtx = p?.default_generation_settings?.n_ctx;
  const slots = p?.total_slots;
  if (typeof template !== "string" || typeof nCtx !== "number" || typeof slots !== "number") {
    throw new Error("the server's /props lacks chat_template, default_generation_settings.n_ctx or total_slots");
  }
  return {
    template_sha256: createHash("sha256").update(template).digest("hex"),
    n_ctx_per_slot: nCtx,
    total_slots: slots,
  };
}

export function inferproxyConfig(layout: Layout, upstream: Upstream, s: StackSettings): JsonObject {
  const up =
    upstream.kind === "url"
      ? { url: upstream.url }
      : { socket_path: upstream.kind === "socket" ? upstream.path : layout.sockets.llama };
  return merge(
    {
      socket: layout.sockets.inferproxy,
      upstream: up,
      ...(s.contract ? { contract: s.contract } : {}),
      // Parked caches are erased and capped where `up` put them; a server it did not start keeps its own.
      slot_files: { dir: upstreamCanPark(upstream) ? layout.slotDir : "" },
      log_level: s.logLevel,
    },
    s.overrides?.inferproxy,
  );
}

export function brokerdConfig(layout: Layout, s: StackSettings): JsonObject {
  const sandbox =
    s.sandbox.mode === "bwrap"
      ? { mode: "bwrap", bwrap_path: s.sandbox.bwrapPath }
      : { mode: "none", allow_unsandboxed: true };
  return merge(
    {
      socket: layout.sockets.brokerd,
      state_dir: layout.brokerState,
      workspace_roots: s.workspaceRoots,
      // A workspace may well contain ~/.local/state: session logs, blobs and
      // sockets must stay out of the tools' reach all the same.
      protected_paths: ["/etc/boxmaker", layout.stateDir, layout.runtimeDir],
      sandbox,
      log_level: s.logLevel,
    },
    s.overrides?.brokerd,
  );
}

/** `canPark`: whether the server saves slots (`up` asks a server it did not start; see parking-probe.ts). */
export function loopdConfig(
  layout: Layout,
  upstream: Upstream,
  s: StackSettings,
  canPark = upstreamCanPark(upstream),
): JsonObject {
  return merge(
    {
      socket: layout.sockets.loopd,
      state_dir: layout.loopdState,
      inferproxy_socket: layout.sockets.inferproxy,
      brokerd_socket: layout.sockets.brokerd,
      parking: { enabled: canPark },
      // AGENTS.md (or the configured name) at the first workspace root goes into the system prompt.
      project_instructions: { workspace: s.workspaceRoots[0] ?? "" },
      log_level: s.logLevel,
    },
    s.overrides?.loopd,
  );
}

/** Objects merge key by key; anything else (arrays included) replaces. */
function merge(base: JsonObject, over: JsonObject | undefined): JsonObject {
  if (!over) return base;
  const out: JsonObject = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] = isObject(b) && isObject(v) ? merge(b, v) : v;
  }
  return out;
}

const isObject = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

/** Keys an --overrides file must not set: the supervisor waits on the paths it chose. */
const MANAGED_KEYS: Record<"inferproxy" | "brokerd" | "loopd", readonly string[]> = {
  inferproxy: ["socket", "upstream"],
  brokerd: ["socket", "state_dir"],
  loopd: ["socket", "state_dir", "inferproxy_socket", "brokerd_socket"],
};

export function checkOverrides(over: unknown): StackSettings["overrides"] {
  if (!isObject(over)) throw new UsageError("--overrides: the file must hold a JSON object");
  for (const key of Object.keys(over)) {
    if (!(key in MANAGED_KEYS))
      throw new UsageError(`--overrides: unknown daemon "${key}" (inferproxy, brokerd, loopd)`);
    const section = over[key];
    if (!isObject(section)) throw new UsageError(`--overrides: "${key}" must be an object`);
    for (const managed of MANAGED_KEYS[key as keyof typeof MANAGED_KEYS]) {
      if (managed in section) throw new UsageError(`--overrides: ${key}.${managed} is set by boxmaker up`);
    }
  }
  return over as StackSettings["overrides"];
}
