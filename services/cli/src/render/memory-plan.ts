import type { MemoryPlan, ModelFacts, PlanOptions } from "../memory/memory-plan.js";

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** Bytes as a person reads them: GiB with two decimals from 1 GiB, else MiB. */
function sizeText(bytes: number): string {
  const sign = bytes < 0 ? "-" : "";
  const b = Math.abs(bytes);
  return b >= GiB ? `${sign}${(b / GiB).toFixed(2)} GiB` : `${sign}${(b / MiB).toFixed(2)} MiB`;
}

const perToken = (b: number) => (b < 1024 ? `${b} B` : `${(b / 1024).toFixed(1)} KiB`);

/** The plan as `boxmaker memory-plan` and `doctor` print it: one line per part, then the verdict. */
export function renderMemoryPlan(path: string, facts: ModelFacts, opts: PlanOptions, plan: MemoryPlan): string {
  const kvHeads = [...new Set(facts.kvHeads)].join("/");
  const rows: [string, string, string][] = [
    ["weights", sizeText(plan.weightsBytes), `${facts.architecture}, ${facts.layers} layers (the file's tensor data)`],
    [
      "KV cache",
      sizeText(plan.kvBytes),
      `${opts.slots} slot${opts.slots === 1 ? "" : "s"} × ${plan.cellsPerSlot} tokens, K ${opts.kvTypeK} ${sizeText(plan.kBytes)} + V ${opts.kvTypeV} ${sizeText(plan.vBytes)} (${kvHeads} KV heads × ${facts.headSizeK}/${facts.headSizeV}; ${perToken(plan.kvBytesPerToken)} a token)`,
    ],
    [
      "compute",
      sizeText(plan.computeMarginBytes),
      "a stated margin (llama-server reports its compute buffers at load)",
    ],
    ["total", sizeText(plan.totalBytes), ""],
  ];
  const w = Math.max(...rows.map((r) => r[1].length));
  const lines = [`memory plan for ${path}${facts.name ? ` (${facts.name})` : ""}`];
  for (const [what, size, why] of rows) lines.push(`  ${what.padEnd(9)} ${size.padStart(w)}${why ? `  ${why}` : ""}`);
  for (const n of plan.notes) lines.push(`  note: ${n}`);
  if (plan.refusal) lines.push(`verdict: refused: ${plan.refusal}`);
  else if (!plan.capBytes) lines.push("verdict: no cap stated (--cap SIZE: the memory llama-server may use)");
  else if (plan.headroomBytes >= 0)
    lines.push(`verdict: fits under ${sizeText(plan.capBytes)}, ${sizeText(plan.headroomBytes)} to spare`);
  else
    lines.push(
      `verdict: does not fit: ${sizeText(-plan.headroomBytes)} over ${sizeText(plan.capBytes)}; ` +
        `each slot's context costs ${sizeText(plan.kvBytes / opts.slots)} (fewer slots, less context per slot, or a smaller KV type)`,
    );
  return `${lines.join("\n")}\n`;
}

/** The module's `llamaServer.modelFacts` for this file, to paste into a NixOS configuration. */
export function nixModelFacts(facts: ModelFacts): string {
  const heads = new Set(facts.kvHeads);
  const kv = heads.size === 1 ? String(facts.kvHeads[0]) : `[ ${facts.kvHeads.join(" ")} ]`;
  return (
    `services.boxmaker.llamaServer.modelFacts = {\n` +
    `  layers = ${facts.layers};\n` +
    `  kvHeads = ${kv};\n` +
    `  headSizeK = ${facts.headSizeK};\n` +
    `  headSizeV = ${facts.headSizeV};\n` +
    `  weightsBytes = ${facts.weightsBytes};\n` +
    "};\n"
  );
}
