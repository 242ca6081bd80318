/**
 * The facts every part of a Boxmaker stack must agree on, in one place: where
 * the sockets are, the llama-server contract (slots, context, template, the
 * flags that make slots pinnable), the sampling settings and the per-request
 * and per-turn limits. The daemons' config schemas take their defaults from
 * here, `boxmaker up` writes llama-server's flags from here, and the Nix module
 * reads the same values from `nix/stack-defaults.json`, which
 * `npm run gen:stack-defaults` writes from this file (test/deploy checks that
 * the JSON, deploy/config and deploy/systemd agree with it).
 *
 * Why these values: docs/contract.md.
 */

const RUNTIME_DIR = "/run/boxmaker";
const STATE_DIR = "/var/lib/boxmaker";

/** Socket file names inside a runtime directory (systemd's /run/boxmaker or `boxmaker up`'s own). */
export const SOCKET_FILES = {
  llama: "llama.sock",
  inferproxy: "inferproxy.sock",
  brokerd: "brokerd.sock",
  loopd: "loopd.sock",
} as const;

export type SocketName = keyof typeof SOCKET_FILES;

/** The system-wide sockets (systemd units, the NixOS module, the CLI's default). */
export const DEFAULT_SOCKETS: Readonly<Record<SocketName, string>> = {
  llama: `${RUNTIME_DIR}/${SOCKET_FILES.llama}`,
  inferproxy: `${RUNTIME_DIR}/${SOCKET_FILES.inferproxy}`,
  brokerd: `${RUNTIME_DIR}/${SOCKET_FILES.brokerd}`,
  loopd: `${RUNTIME_DIR}/${SOCKET_FILES.loopd}`,
};

export const DEFAULT_DIRS = {
  runtime: RUNTIME_DIR,
  state: STATE_DIR,
  loopdState: `${STATE_DIR}/loopd`,
  brokerdState: `${STATE_DIR}/broker`,
  slotSave: `${STATE_DIR}/slots`,
} as const;

/** The kinds of work loopd pins to a slot each. */
export type SlotRole = "main" | "subagent" | "scheduled";
export type SlotMap = Readonly<Record<SlotRole, number>>;

/**
 * Which llama-server slot each kind of work runs on, by the server's slot
 * count: the one table loopd (a map not given in its config), `boxmaker up`
 * and the NixOS module (nix/lib.nix, from nix/stack-defaults.json) follow.
 * Fewer slots than roles share the last one: two slots put subagents beside
 * scheduled work (a scheduled session waits on its subagent, which then runs
 * on its parent's hold), one slot puts everything on slot 0.
 */
export const SLOT_MAPS: Readonly<Record<1 | 2 | 3, SlotMap>> = {
  1: { main: 0, subagent: 0, scheduled: 0 },
  2: { main: 0, subagent: 1, scheduled: 1 },
  3: { main: 0, subagent: 1, scheduled: 2 },
};

/** Which slot each kind of work is pinned to on the production layout (three slots). */
export const SLOT_IDS = SLOT_MAPS[3];

/** The map for a server with `totalSlots` slots; more than three leave the rest idle. */
export function slotMapFor(totalSlots: number): SlotMap {
  return SLOT_MAPS[Math.min(3, Math.max(1, Math.floor(totalSlots))) as 1 | 2 | 3];
}

/** The production llama-server contract, checked by inferproxy's self-test against GET /props. */
export const LLAMA_CONTRACT = {
  slots: 3,
  contextSize: 393_216,
  /** contextSize / slots: with --no-kv-unified each slot owns its share. */
  nCtxPerSlot: 131_072,
  templateSha256: "f55f52930aa8bf44ab5cb85f99370fcc3c56e9a85640b812086d5330bce5d86b",
} as const;

/**
 * The KV cache's element type (`--cache-type-k/--cache-type-v`). q8_0 rather
 * than llama.cpp's f16: it halves the KV memory of every slot, which is what
 * lets the measured layout (131k per slot) sit beside another resident model,
 * and its effect on output is within llama.cpp's own measurement noise.
 * Quantized V needs flash attention, which the fixed flags turn on.
 */
export const DEFAULT_KV_CACHE_TYPE = "q8_0";

/**
 * llama-server's --cache-type-k/-v values and what an element costs: bytes
 * per block of `block` elements (ggml's type traits). A quantised type's
 * block must divide the model's head size, or llama-server refuses to load.
 * The CLI's memory plan and the NixOS module's (nix/lib.nix) read this one table.
 */
export const KV_CACHE_TYPES = {
  f32: { bytes: 4, block: 1 },
  f16: { bytes: 2, block: 1 },
  bf16: { bytes: 2, block: 1 },
  q8_0: { bytes: 34, block: 32 },
  q5_1: { bytes: 24, block: 32 },
  q5_0: { bytes: 22, block: 32 },
  q4_1: { bytes: 20, block: 32 },
  q4_0: { bytes: 18, block: 32 },
  iq4_nl: { bytes: 18, block: 32 },
} as const;
export type KvCacheType = keyof typeof KV_CACHE_TYPES;

/**
 * llama-server's flags besides socket, model, slots, context, KV type and
 * slot-save path (which a deployment may choose). Boxmaker relies on each:
 */
export const LLAMA_FIXED_FLAGS: readonly string[] = [
  // Per-slot KV (ctx-size / parallel each): with a unified cache the server
  // clears idle slots on every new task, which would evict pinned sessions.
  "--no-kv-unified",
  "--jinja",
  "--flash-attn",
  "on",
  "--no-mmap",
  "--n-gpu-layers",
  "999",
  // No host-RAM prompt cache: slots stay pinned; parking goes through --slot-save-path.
  "--cache-ram",
  "0",
  "--no-cache-idle-slots",
];

/** The whole llama-server command line but the binary: the one definition up, deploy and nix follow. */
export function llamaServerArgs(o: {
  socket: string;
  model: string;
  slotSavePath: string;
  slots?: number;
  contextSize?: number;
  kvCacheType?: string;
  extraArgs?: readonly string[];
}): string[] {
  const kv = o.kvCacheType ?? DEFAULT_KV_CACHE_TYPE;
  return [
    "--host",
    o.socket,
    "--model",
    o.model,
    "--parallel",
    String(o.slots ?? LLAMA_CONTRACT.slots),
    "--ctx-size",
    String(o.contextSize ?? LLAMA_CONTRACT.contextSize),
    "--cache-type-k",
    kv,
    "--cache-type-v",
    kv,
    ...LLAMA_FIXED_FLAGS,
    "--slot-save-path",
    o.slotSavePath,
    ...(o.extraArgs ?? []),
  ];
}

/** Sampling sent with every request (the model card's recommended thinking-mode settings). */
export const DEFAULT_SAMPLING = { temperature: 0.6, top_p: 0.95, top_k: 20, min_p: 0 } as const;

/**
 * max_tokens of one model request. loopd sends it (lowered to what the turn's
 * budget has left); inferproxy uses the same value when a caller sends none.
 */
export const MAX_TOKENS_PER_REQUEST = 8_192;

/** Per-turn limits (loopd's budgets). */
/**
 * What every new session sends before its first message (system prompt,
 * the tools array, project instructions) may take at most this many of the
 * server's tokens: the seeds' budget, since every session and every fold
 * pays it again. loopd measures it with the server's tokenizer at every
 * self-test; `status` and `doctor` say when it is over.
 */
export const BASELINE_PROMPT_BUDGET_TOKENS = 3_000;

export const DEFAULT_BUDGETS = {
  max_iterations: 25,
  max_total_tokens: 200_000,
  max_wall_ms: 600_000,
  max_thinking_tokens: 8_192,
} as const;

/**
 * Node flags every daemon runs with (systemd units, the Nix package's
 * wrappers, `boxmaker up`, the tests). A 1 MB young-generation semi-space
 * instead of V8's 16 MB: the daemons keep little short-lived data between
 * requests, and it saves 15–20 MB of resident memory per daemon
 * (docs/benchmarks.md, footprint).
 */
export const DAEMON_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=1"];

/**
 * Node flags the CLI runs with (its launcher's #! line, the Nix package's
 * wrapper). A young generation of 16 MB from the start, V8's ceiling for it
 * anyway: what a command allocates while it starts (descriptors, compiled
 * code, the reply) otherwise goes through several scavenges as V8 grows the
 * young generation from 1 MB, each copying what survived; a process that
 * lives for a tenth of a second should not pay for them (docs/benchmarks.md,
 * CLI start-up).
 */
export const CLI_NODE_FLAGS: readonly string[] = ["--min-semi-space-size=16"];

/** Everything above as plain JSON, for the Nix module (nix/stack-defaults.json). */
export function stackDefaultsJson(): string {
  return `${JSON.stringify(
    {
      "//": "Generated from services/common/src/stack-defaults.ts by `npm run gen:stack-defaults`; do not edit.",
      socketFiles: SOCKET_FILES,
      sockets: DEFAULT_SOCKETS,
      dirs: DEFAULT_DIRS,
      slotIds: SLOT_IDS,
      slotMaps: SLOT_MAPS,
      llamaContract: LLAMA_CONTRACT,
      kvCacheType: DEFAULT_KV_CACHE_TYPE,
      kvCacheTypes: KV_CACHE_TYPES,
      llamaFixedFlags: LLAMA_FIXED_FLAGS,
      sampling: DEFAULT_SAMPLING,
      maxTokensPerRequest: MAX_TOKENS_PER_REQUEST,
      budgets: DEFAULT_BUDGETS,
      daemonNodeFlags: DAEMON_NODE_FLAGS,
      cliNodeFlags: CLI_NODE_FLAGS,
    },
    null,
    2,
  )}\n`;
}
