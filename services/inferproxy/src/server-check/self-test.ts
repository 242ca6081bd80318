import type { SelfTest } from "@boxmaker/common";
import { createHash } from "node:crypto";
import type { ContractConfig } from "../config.js";

/** The parts of `GET /props` the contract is about. */
export interface Props {
  chat_template?: string;
  total_slots?: number;
  default_generation_settings?: { n_ctx?: number };
  build_info?: string;
  model_alias?: string;
  model_path?: string;
  is_sleeping?: boolean;
  bos_token?: string;
  eos_token?: string;
}

/**
 * The self-test's result: the generated SelfTest message (infer.proto is the
 * one definition of its fields), with the time as a number until Status
 * writes it out.
 */
export type SelfTestResult = Omit<SelfTest, "$typeName" | "$unknown" | "checkedAtUnixMs"> & { checkedAtUnixMs: number };

export function notRun(contract: ContractConfig): SelfTestResult {
  return {
    ran: false,
    passed: false,
    expectedTemplateSha256: contract.template_sha256,
    actualTemplateSha256: "",
    expectedNCtx: contract.n_ctx_per_slot,
    actualNCtx: 0,
    expectedTotalSlots: contract.total_slots,
    actualTotalSlots: 0,
    mismatches: [],
    checkedAtUnixMs: 0,
    acceptCommand: "",
    modelKey: "",
    contractEntry: "",
  };
}

export function templateSha256(template: string): string {
  return createHash("sha256").update(template, "utf8").digest("hex");
}

/**
 * Compares what the server says about itself with the recorded contract. A
 * different template renders different prompt bytes (stored sessions stop
 * hitting the cache, tool calls may parse differently); a different n_ctx_per_slot
 * or total_slots breaks the budgets and the slot pinning loopd plans with.
 */
export function evaluateProps(props: Props, contract: ContractConfig, nowMs: number): SelfTestResult {
  const r = notRun(contract);
  r.ran = true;
  r.checkedAtUnixMs = nowMs;
  r.actualTemplateSha256 = typeof props.chat_template === "string" ? templateSha256(props.chat_template) : "";
  r.actualNCtx = props.default_generation_settings?.n_ctx ?? 0;
  r.actualTotalSlots = props.total_slots ?? 0;
  // Each line names the field as inferproxy's config does (contract.*), so what the
  // log, Status, an error and the docs say is the key the operator edits.
  if (typeof props.chat_template !== "string") {
    r.mismatches.push("template_sha256: /props has no chat_template (is llama-server started with --jinja?)");
  } else if (r.actualTemplateSha256 !== contract.template_sha256) {
    r.mismatches.push(
      `template_sha256: expected ${contract.template_sha256}, server has ${r.actualTemplateSha256} ` +
        `(${props.chat_template.length} chars): the model or its template changed`,
    );
  }
  if (r.actualNCtx !== contract.n_ctx_per_slot) {
    r.mismatches.push(
      `n_ctx_per_slot: expected ${contract.n_ctx_per_slot}, server has ${r.actualNCtx} (check --ctx-size / --parallel)`,
    );
  }
  if (r.actualTotalSlots !== contract.total_slots) {
    r.mismatches.push(
      `total_slots: expected ${contract.total_slots}, server has ${r.actualTotalSlots} (check --parallel)`,
    );
  }
  r.passed = r.mismatches.length === 0;
  return r;
}
