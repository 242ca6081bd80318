/**
 * What a llama-server configuration needs in memory, before the GPU finds
 * out: the weights (the GGUF's tensor data), the KV cache for every slot's
 * context (computed as llama.cpp allocates it; test/real checks it against
 * the server's own "llama_kv_cache: size" line), and a stated margin for
 * compute buffers, which depend on the backend and are reported only at load.
 * Pure: the facts come from gguf-metadata.ts.
 */
import { KV_CACHE_TYPES, type KvCacheType } from "@boxmaker/common/lite";
import type { GgufHeader } from "./gguf-metadata.js";

export const isKvType = (t: string): t is KvCacheType => Object.hasOwn(KV_CACHE_TYPES, t);

/** llama.cpp pads the context it allocates, and each slot's share, to a multiple of this (llama_context's n_ctx). */
const CTX_PAD = 256;

export interface ModelFacts {
  name: string;
  architecture: string;
  layers: number;
  /** Per layer: KV heads (0 for a layer without attention, as a hybrid model's recurrent ones). */
  kvHeads: number[];
  headSizeK: number;
  headSizeV: number;
  /** The tensor data: what loading the weights takes. */
  weightsBytes: number;
  trainedContext: number;
  /** Why the KV figure cannot be derived for this architecture; "" when it can. */
  kvUnknown: string;
  /** What the plan does not count, said next to it. */
  notes: string[];
}

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/** A plan's facts from a GGUF header; a key the plan needs and the file lacks is an error naming it. */
export function modelFacts(h: GgufHeader, path: string): ModelFacts {
  const arch = h.kv.get("general.architecture");
  if (typeof arch !== "string") throw new Error(`${path}: no general.architecture in its header`);
  const get = (k: string) => h.kv.get(`${arch}.${k}`);
  const need = (k: string): number => {
    const v = num(get(k));
    if (v === undefined || v < 0) throw new Error(`${path}: no ${arch}.${k} in its header`);
    return v;
  };
  const layers = need("block_count");
  const embedding = need("embedding_length");
  const heads = num(get("attention.head_count")) ?? (Array.isArray(get("attention.head_count")) ? undefined : 0);
  const perLayer = (v: unknown, fallback: number): number[] =>
    Array.isArray(v) ? v.map((x) => num(x) ?? 0) : Array.from({ length: layers }, () => num(v) ?? fallback);
  const headsPerLayer = perLayer(get("attention.head_count"), heads ?? 0);
  const kvHeads = perLayer(get("attention.head_count_kv"), headsPerLayer[0] ?? 0);
  const firstHeads = headsPerLayer.find((n) => n > 0) ?? 0;
  const headSizeK = num(get("attention.key_length")) ?? (firstHeads ? embedding / firstHeads : 0);
  const headSizeV = num(get("attention.value_length")) ?? (firstHeads ? embedding / firstHeads : 0);
  const notes: string[] = [];
  let kvUnknown = "";
  if (get("attention.kv_lora_rank") !== undefined)
    kvUnknown = `${arch} compresses its KV cache (multi-head latent attention); this plan does not model it`;
  if (get("attention.sliding_window") !== undefined)
    notes.push("sliding-window layers are counted at the full context: the KV figure is an upper bound");
  if (kvHeads.some((n) => n === 0) || get("ssm.state_size") !== undefined)
    notes.push("recurrent layers' state (per slot, not per token) is not counted");
  const name = h.kv.get("general.name");
  return {
    name: typeof name === "string" ? name : "",
    architecture: arch,
    layers,
    kvHeads: kvHeads.slice(0, layers),
    headSizeK,
    headSizeV,
    weightsBytes: h.fileBytes - h.dataOffset,
    trainedContext: num(get("context_length")) ?? 0,
    kvUnknown,
    notes,
  };
}

export interface PlanOptions {
  slots: number;
  ctxPerSlot: number;
  kvTypeK: KvCacheType;
  kvTypeV: KvCacheType;
  /** Compute buffers and backend overhead: not derivable from the file, so a stated figure. */
  computeMarginBytes: number;
  /** The memory the server may use (the GPU's, or what a unified-memory machine gives it); 0 for none stated. */
  capBytes: number;
}

export interface MemoryPlan {
  /** Context cells llama-server allocates (slots × ctxPerSlot, padded), and each slot's share. */
  cells: number;
  cellsPerSlot: number;
  weightsBytes: number;
  kBytes: number;
  vBytes: number;
  kvBytes: number;
  computeMarginBytes: number;
  totalBytes: number;
  capBytes: number;
  /** cap − total; negative when it does not fit. Meaningless without a cap. */
  headroomBytes: number;
  /** KV bytes one more token of context costs across all layers (both K and V). */
  kvBytesPerToken: number;
  /** Why llama-server would refuse these settings for this model ("" when it would not). */
  refusal: string;
  notes: string[];
}

/** The memory `facts` need under `opts`, as llama.cpp allocates it. */
export function memoryPlan(facts: ModelFacts, opts: PlanOptions): MemoryPlan {
  // llama_context pads the whole context, then each slot's share (without --kv-unified each slot owns one).
  const pad = (n: number) => Math.ceil(n / CTX_PAD) * CTX_PAD;
  const cellsPerSlot = pad(Math.floor(pad(opts.slots * opts.ctxPerSlot) / opts.slots));
  const cells = cellsPerSlot * opts.slots;
  const k = KV_CACHE_TYPES[opts.kvTypeK];
  const v = KV_CACHE_TYPES[opts.kvTypeV];
  // llama.cpp refuses a quantised cache whose blocks do not divide a head (llama_init_from_model).
  const refusal =
    facts.headSizeK % k.block !== 0
      ? `llama-server refuses --cache-type-k ${opts.kvTypeK} for this model: its K head size ${facts.headSizeK} is not a multiple of ${opts.kvTypeK}'s block of ${k.block}`
      : facts.headSizeV % v.block !== 0
        ? `llama-server refuses --cache-type-v ${opts.kvTypeV} for this model: its V head size ${facts.headSizeV} is not a multiple of ${opts.kvTypeV}'s block of ${v.block}`
        : "";
  const kvHeadsTotal = facts.kvUnknown ? 0 : facts.kvHeads.reduce((a, n) => a + n, 0);
  const kPerToken = (kvHeadsTotal * facts.headSizeK * k.bytes) / k.block;
  const vPerToken = (kvHeadsTotal * facts.headSizeV * v.bytes) / v.block;
  const kBytes = cells * kPerToken;
  const vBytes = cells * vPerToken;
  const kvBytes = kBytes + vBytes;
  const totalBytes = facts.weightsBytes + kvBytes + opts.computeMarginBytes;
  const notes = [...facts.notes];
  if (facts.kvUnknown) notes.unshift(`KV cache not counted: ${facts.kvUnknown}`);
  if (facts.trainedContext && cellsPerSlot > facts.trainedContext)
    notes.push(`each slot's ${cellsPerSlot} tokens exceed the ${facts.trainedContext} the model was trained on`);
  return {
    cells,
    cellsPerSlot,
    weightsBytes: facts.weightsBytes,
    kBytes,
    vBytes,
    kvBytes,
    computeMarginBytes: opts.computeMarginBytes,
    totalBytes,
    capBytes: opts.capBytes,
    headroomBytes: opts.capBytes - totalBytes,
    kvBytesPerToken: kPerToken + vPerToken,
    refusal,
    notes,
  };
}

const UNITS: Record<string, number> = {
  b: 1,
  k: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tib: 1024 ** 4,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
};

/** "104GiB", "69 GB", "512MiB", "1073741824": bytes; GiB and GB mean what they say. */
export function parseSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const unit = UNITS[(m?.[2] || "b").toLowerCase()];
  if (!m || unit === undefined)
    throw new Error(`not a size: "${text}" (say 104GiB, 69GB, 512MiB or a number of bytes)`);
  return Math.round(Number(m[1]) * unit);
}
