import { DEFAULT_KV_CACHE_TYPE, KV_CACHE_TYPES, type KvCacheType, LLAMA_CONTRACT } from "@boxmaker/common/lite";
import type { Command } from "commander";
import { UsageError } from "../errors.js";
import { ExitCode } from "../exit-codes.js";
import { output } from "../output.js";
import { readGgufHeader } from "../memory/gguf-metadata.js";
import {
  isKvType,
  memoryPlan,
  modelFacts,
  parseSize,
  type MemoryPlan,
  type ModelFacts,
  type PlanOptions,
} from "../memory/memory-plan.js";
import { nixModelFacts, renderMemoryPlan } from "../render/memory-plan.js";
import { printOut } from "../render/terminal-safe.js";

/** Compute buffers are the backend's and known only at load: this margin is said, not derived. */
const DEFAULT_COMPUTE_MARGIN = "2GiB";

export interface PlanFlags {
  slots?: string;
  ctxPerSlot?: string;
  kvType?: string;
  cacheTypeK?: string;
  cacheTypeV?: string;
  computeMargin?: string;
  cap?: string;
}

const positiveInt = (flag: string, v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a whole number of at least 1, not "${v}"`);
  return n;
};

const kvType = (flag: string, v: string): KvCacheType => {
  if (!isKvType(v))
    throw new UsageError(`${flag} ${v} is not a llama-server cache type (${Object.keys(KV_CACHE_TYPES).join(", ")})`);
  return v;
};

const size = (flag: string, v: string): number => {
  try {
    return parseSize(v);
  } catch (err) {
    throw new UsageError(`${flag}: ${(err as Error).message}`);
  }
};

/** The plan's options from flags, with the stack's defaults (3 × 131,072 tokens of q8_0) where none is given. */
function planOptions(f: PlanFlags, known: { slots?: number; ctxPerSlot?: number } = {}): PlanOptions {
  const both = f.kvType ? kvType("--kv-type", f.kvType) : undefined;
  return {
    slots: f.slots ? positiveInt("--slots", f.slots) : (known.slots ?? LLAMA_CONTRACT.slots),
    ctxPerSlot: f.ctxPerSlot
      ? positiveInt("--ctx-per-slot", f.ctxPerSlot)
      : (known.ctxPerSlot ?? LLAMA_CONTRACT.nCtxPerSlot),
    kvTypeK: f.cacheTypeK ? kvType("--cache-type-k", f.cacheTypeK) : (both ?? (DEFAULT_KV_CACHE_TYPE as KvCacheType)),
    kvTypeV: f.cacheTypeV ? kvType("--cache-type-v", f.cacheTypeV) : (both ?? (DEFAULT_KV_CACHE_TYPE as KvCacheType)),
    computeMarginBytes: size("--compute-margin", f.computeMargin ?? DEFAULT_COMPUTE_MARGIN),
    capBytes: f.cap ? size("--cap", f.cap) : 0,
  };
}

/** The model file's facts, or a one-line error naming the file. */
function factsOf(path: string): ModelFacts {
  try {
    return modelFacts(readGgufHeader(path), path);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new Error(e.code ? `${path}: cannot read: ${e.code}` : e.message);
  }
}

/** The plan's --json form: every figure in bytes. */
function planJson(path: string, facts: ModelFacts, opts: PlanOptions, plan: MemoryPlan) {
  const fits = plan.refusal ? false : plan.capBytes ? plan.headroomBytes >= 0 : null;
  return { model: path, facts, options: opts, plan, fits };
}

/** 0 when it fits (or no cap was stated), 1 when it does not or llama-server would refuse it. */
export const planExit = (plan: MemoryPlan): number =>
  plan.refusal || (plan.capBytes && plan.headroomBytes < 0) ? ExitCode.failed : ExitCode.ok;

function addPlanOptions(cmd: Command): Command {
  return cmd
    .option("--slots <n>", `llama-server's --parallel (default ${LLAMA_CONTRACT.slots})`)
    .option("--ctx-per-slot <tokens>", `context per slot (default ${LLAMA_CONTRACT.nCtxPerSlot})`)
    .option("--kv-type <type>", `--cache-type-k and -v both (default ${DEFAULT_KV_CACHE_TYPE})`)
    .option("--cache-type-k <type>", "the K cache's type alone")
    .option("--cache-type-v <type>", "the V cache's type alone")
    .option("--compute-margin <size>", `room for compute buffers (default ${DEFAULT_COMPUTE_MARGIN})`)
    .option("--cap <size>", "the memory llama-server may use, e.g. 104GiB: the plan says whether it fits");
}

/**
 * doctor's memory section for the server the stack serves: its model file (when
 * llama-server names it by path and this user can read it), its slots and
 * context as the self-test read them, and the KV type given (the stack's
 * default is assumed: /props does not say it).
 */
export function servedPlan(
  served: { model: string; slots: number; ctxPerSlot: number },
  flags: PlanFlags & { model?: string },
): { text: string; plan?: MemoryPlan; json: unknown } {
  const path = flags.model ?? (served.model.startsWith("/") ? served.model : "");
  if (!path) {
    const why = served.model ? `llama-server names its model "${served.model}", not a file` : "no model is served";
    return { text: `memory plan: ${why}: pass --model FILE.gguf\n`, json: null };
  }
  const known = {
    ...(served.slots ? { slots: served.slots } : {}),
    ...(served.ctxPerSlot ? { ctxPerSlot: served.ctxPerSlot } : {}),
  };
  const options = planOptions(flags, known);
  let facts: ModelFacts;
  try {
    facts = factsOf(path);
  } catch (err) {
    return { text: `memory plan: ${(err as Error).message}\n`, json: { model: path, error: (err as Error).message } };
  }
  const plan = memoryPlan(facts, options);
  const assumed = !(flags.kvType || flags.cacheTypeK || flags.cacheTypeV);
  const json = planJson(path, facts, options, plan);
  // A server that runs did not refuse its KV type: the assumed one is not what it runs.
  if (assumed && plan.refusal) {
    return {
      text: `memory plan: the served model cannot run a ${options.kvTypeK} KV cache (${plan.refusal.replace(/^llama-server refuses [^:]+: /, "")}), so the server runs another: pass --kv-type\n`,
      json,
    };
  }
  const note = assumed ? `  (KV type ${options.kvTypeK} assumed: llama-server does not report it; --kv-type)\n` : "";
  return { text: renderMemoryPlan(path, facts, options, plan) + note, plan, json };
}

export function register(program: Command): void {
  addPlanOptions(
    program
      .command("memory-plan")
      .description("the memory a llama-server configuration needs: weights, KV cache, compute, against a cap")
      .argument("<model>", "the GGUF file llama-server loads")
      .option("--json", "print the plan as one JSON object (bytes)")
      .option("--nix", "print the NixOS module's llamaServer.modelFacts for this file"),
  )
    .addHelpText(
      "after",
      `
Read from the GGUF file's header (layers, KV heads, head sizes, the weights'
size) with the stack's defaults for what is not given: ${LLAMA_CONTRACT.slots} slots × ${LLAMA_CONTRACT.nCtxPerSlot} tokens
of ${DEFAULT_KV_CACHE_TYPE} KV. The KV figure is what llama-server allocates (its own
"llama_kv_cache: size" line at load); compute buffers are a stated margin.
Exit 0 when it fits (or no --cap), 1 when it does not or llama-server would
refuse the cache type for this model.

Examples:
  boxmaker memory-plan /var/lib/models/model.gguf --slots 2 --cap 104GiB
  boxmaker memory-plan model.gguf --kv-type f16 --json | jq .plan.kvBytes
  boxmaker memory-plan model.gguf --nix >> modelFacts.nix`,
    )
    .action(async (path: string, opts: PlanFlags & { json?: boolean; nix?: boolean }) => {
      const options = planOptions(opts);
      const facts = factsOf(path);
      const plan = memoryPlan(facts, options);
      if (opts.nix) {
        printOut(nixModelFacts(facts));
        return;
      }
      await output(opts, {
        json: () => ({ value: planJson(path, facts, options, plan) }),
        text: () => renderMemoryPlan(path, facts, options, plan),
      });
      process.exitCode = planExit(plan);
    });
}
