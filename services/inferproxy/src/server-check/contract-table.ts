import { ConfigError, contractModelKey } from "@boxmaker/common";
import type { ContractConfig, ContractEntry, InferproxyConfig } from "../config.js";
import type { Props } from "./self-test.js";

/**
 * Which contract a server is held to: the `contracts` entry for the model it
 * serves (keyed as contract-model.ts says), else `contract`, the one for any
 * other model. A model swap to one the operator has accepted before needs no
 * edit and no restart of inferproxy.
 */
export interface ChosenContract {
  contract: ContractConfig;
  /** The served model's key ("" before the server has said). */
  modelKey: string;
  /** The entry's model, or "" when `contract` applies. */
  entry: string;
  /** The table's models, for saying which exist when none is this one. */
  known: string[];
}

export function chooseContract(
  props: Props | undefined,
  cfg: Pick<InferproxyConfig, "contract" | "contracts">,
): ChosenContract {
  const modelKey = props ? contractModelKey(props) : "";
  const known = cfg.contracts.map((e) => e.model);
  const hit = modelKey ? cfg.contracts.find((e) => e.model === modelKey) : undefined;
  if (!hit) return { contract: cfg.contract, modelKey, entry: "", known };
  const { template_sha256, n_ctx_per_slot, total_slots } = hit;
  return { contract: { template_sha256, n_ctx_per_slot, total_slots }, modelKey, entry: hit.model, known };
}

/** Two entries for one model would leave which one applies to the order of the file. */
export function checkContractTable(entries: readonly ContractEntry[], source: string): void {
  const seen = new Set<string>();
  for (const e of entries) {
    if (seen.has(e.model)) {
      throw new ConfigError(`${source}: key "contracts" has two entries for model "${e.model}"; keep one`);
    }
    seen.add(e.model);
  }
}
