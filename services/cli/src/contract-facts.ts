// What `boxmaker contract` knows of the server and the contract it is held
// to: from inferproxy through loopd, or from llama-server itself when the
// stack is not up. commands/contract.ts shows it and accepts it.
import type { InferStatusResponse } from "@boxmaker/common/client";
import { DEFAULT_SOCKETS, contractModelKey } from "@boxmaker/common/lite";
import { withClient } from "./connection.js";
import {
  type CONTRACT_KEYS,
  INSTALLED_INFERPROXY_CONFIG,
  contractChanges,
  contractForModel,
  readContractFile,
  type ContractFile,
  type ContractValues,
} from "./contract-file.js";
import { DaemonUnreachable } from "./errors.js";
import type { GlobalOptions } from "./global-options.js";

export const RESTART = "systemctl restart boxmaker-inferproxy";

type Verdict = "matches" | "differs" | "unknown";

/** What inferproxy reports about the server and the contract it holds it to, from loopd's Status. */
export interface ContractFacts {
  verdict: Verdict;
  /** Why the verdict is unknown (inferproxy unreachable, server down or loading). */
  why: string;
  server: ContractValues | undefined;
  contract: ContractValues | undefined;
  differs: (typeof CONTRACT_KEYS)[number][];
  model: string;
  upstream: string;
  serverState: string;
  acceptCommand: string;
  /** The served model's key in the contract table, and the entry the server is held to ("" for `contract`). */
  modelKey: string;
  entry: string;
  /** The template probe's verdict on the served template ("" when it has not run: the stack is not up). */
  probeVerdict: string;
  probeSummary: string;
  /** Who reported the server's values: inferproxy (through loopd), or llama-server itself when the stack is not up. */
  source: "inferproxy" | "llama-server";
  /** Why llama-server was asked directly: the stack is not up, or loopd is but inferproxy did not answer it. */
  askedDirectlyBecause: string;
}

function factsOf(infer: InferStatusResponse | undefined): ContractFacts {
  const t = infer?.selfTest;
  const probe = infer?.templateProbe;
  const base = {
    model: infer?.model ?? "",
    upstream: infer?.upstream ?? "",
    serverState: infer?.serverState ?? "",
    acceptCommand: t?.acceptCommand ?? "",
    modelKey: t?.modelKey ?? "",
    entry: t?.contractEntry ?? "",
    probeVerdict: probe?.ran ? probe.verdict : "",
    probeSummary: probe?.ran ? probe.summary : (probe?.error ?? ""),
    source: "inferproxy" as const,
    askedDirectlyBecause: "",
  };
  const contract = t && {
    template_sha256: t.expectedTemplateSha256,
    n_ctx_per_slot: t.expectedNCtx,
    total_slots: t.expectedTotalSlots,
  };
  // A self-test is only about the server answering now: inferproxy reports none while it is down or loading.
  if (!infer || !t?.ran || infer.serverState !== "ok") {
    const why = !infer
      ? "inferproxy did not answer loopd"
      : `llama-server at ${infer.upstream || "?"} is ${infer.serverState || "unknown"}: nothing has been checked`;
    return { ...base, verdict: "unknown", why, server: undefined, contract, differs: [] };
  }
  const server = {
    template_sha256: t.actualTemplateSha256,
    n_ctx_per_slot: t.actualNCtx,
    total_slots: t.actualTotalSlots,
  };
  const differs = contractChanges(contract!, server).map((c) => c.key);
  return { ...base, verdict: t.passed ? "matches" : "differs", why: "", server, contract, differs };
}

/**
 * What inferproxy sees, through loopd; when the stack is not up (or inferproxy
 * did not answer), what llama-server itself reports on the upstream the config
 * file names, against that file's contract — the install step before the
 * daemons start, where there is no loopd to ask.
 */
export async function contractFacts(
  globals: GlobalOptions,
  read: { file?: ContractFile; error?: string },
): Promise<ContractFacts> {
  let why: string;
  // The short cause shown beside values asked of llama-server directly: loopd not
  // answering is "the stack is not up"; loopd answering without inferproxy is not.
  let because: string;
  try {
    const f = factsOf((await withClient(globals, (client) => client.status({}))).infer);
    if (f.serverState) return f;
    why = f.why;
    because = f.why;
  } catch (err) {
    if (!(err instanceof DaemonUnreachable)) throw err;
    why = err.message;
    because = "the stack is not up";
  }
  if (!read.file) return { ...factsOf(undefined), why: `${why}; and ${read.error}` };
  return serverFacts(read.file, why, because);
}

async function serverFacts(file: ContractFile, loopdWhy: string, because: string): Promise<ContractFacts> {
  const up = (file.json.upstream ?? {}) as { socket_path?: unknown; url?: unknown };
  const url = typeof up.url === "string" ? up.url : undefined;
  const socketPath = typeof up.socket_path === "string" ? up.socket_path : DEFAULT_SOCKETS.llama;
  const where = url ? { url } : { socketPath };
  const upstream = url ?? `unix:${socketPath}`;
  const base = {
    model: "",
    upstream,
    serverState: "",
    acceptCommand: acceptHint(file.path),
    modelKey: "",
    entry: "",
    probeVerdict: "",
    probeSummary: "",
    source: "llama-server" as const,
    askedDirectlyBecause: because,
    contract: file.contract,
    differs: [],
    server: undefined,
  };
  const [{ getJson }, { contractFromProps }] = await Promise.all([
    import("./supervisor/readiness.js"),
    import("./supervisor/configs.js"),
  ]);
  let res: { status: number; body: unknown };
  try {
    res = await getJson(where, "/props", 10_000);
  } catch (err) {
    const detail = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return { ...base, verdict: "unknown", why: `${loopdWhy}; and llama-server at ${upstream}: ${detail}` };
  }
  if (res.status !== 200) {
    const state = res.status === 503 ? "loading" : `answering GET /props with HTTP ${res.status}`;
    return { ...base, verdict: "unknown", serverState: state, why: `llama-server at ${upstream} is ${state}` };
  }
  let server: ContractValues;
  try {
    server = contractFromProps(res.body);
  } catch (err) {
    return {
      ...base,
      verdict: "unknown",
      serverState: "ok",
      why: `llama-server at ${upstream}: ${(err as Error).message}`,
    };
  }
  const props = res.body as { model_path?: unknown; model_alias?: unknown };
  const model =
    typeof props.model_path === "string"
      ? props.model_path
      : typeof props.model_alias === "string"
        ? props.model_alias
        : "";
  const modelKey = contractModelKey(props);
  const held = contractForModel(file, modelKey);
  const differs = contractChanges(held.contract, server).map((c) => c.key);
  return {
    ...base,
    contract: held.contract,
    entry: held.entry,
    modelKey,
    model,
    serverState: "ok",
    server,
    differs,
    verdict: differs.length ? "differs" : "matches",
    why: "",
  };
}

/** The accept command when inferproxy could not say it: for the unit that reads this file. */
function acceptHint(path: string): string {
  const flag = path === INSTALLED_INFERPROXY_CONFIG ? "" : ` --config ${path}`;
  return `\`boxmaker contract accept${flag} && ${RESTART}\``;
}

/** The config file, if it can be read; show reports it without failing on it. */
export function tryRead(path: string): { file?: ContractFile; error?: string } {
  try {
    return { file: readContractFile(path) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}
