import { BoxmakerError, LLAMA_CONTRACT } from "@boxmaker/common/lite";
import {
  closeSync,
  fchmodSync,
  fchownSync,
  fsyncSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { UsageError } from "./errors.js";

/** Where the deployed units read inferproxy's config (deploy/systemd, docs/operations.md). */
export const INSTALLED_INFERPROXY_CONFIG = "/etc/boxmaker/inferproxy.json";

/** inferproxy's `contract` keys, by the names its config, log, errors and docs use. */
export interface ContractValues {
  template_sha256: string;
  n_ctx_per_slot: number;
  total_slots: number;
}
export const CONTRACT_KEYS = ["template_sha256", "n_ctx_per_slot", "total_slots"] as const;
type ContractKey = (typeof CONTRACT_KEYS)[number];

/** What inferproxy uses for a key its file leaves out (its config schema's defaults). */
const DEFAULTS: ContractValues = {
  template_sha256: LLAMA_CONTRACT.templateSha256,
  n_ctx_per_slot: LLAMA_CONTRACT.nCtxPerSlot,
  total_slots: LLAMA_CONTRACT.slots,
};

/** A config file that cannot be read, parsed or replaced: exit 1, naming the file and why. */
export class ContractFileError extends BoxmakerError<"CONTRACT_FILE"> {
  constructor(message: string, options?: ErrorOptions) {
    super("CONTRACT_FILE", message, options);
  }
}

export interface ContractFile {
  /** The file itself (a symlink followed: replacing the link would leave its target as it was). */
  path: string;
  json: Record<string, unknown>;
  /** The file's `contract` (for a model the table has no entry for): its keys, else the defaults. */
  contract: ContractValues;
  /** The contract table (`contracts`), one entry per model. */
  entries: ContractEntryValues[];
}

/** One entry of inferproxy's contract table (its config's `contracts`). */
interface ContractEntryValues extends ContractValues {
  model: string;
  probe_verdict?: string;
}

/** What inferproxy holds a server serving `model` to, by this file: its entry, else `contract`. */
export function contractForModel(file: ContractFile, model: string): { contract: ContractValues; entry: string } {
  const e = file.entries.find((x) => x.model === model);
  if (!e) return { contract: file.contract, entry: "" };
  return {
    contract: { template_sha256: e.template_sha256, n_ctx_per_slot: e.n_ctx_per_slot, total_slots: e.total_slots },
    entry: e.model,
  };
}

const NIX_HINT =
  "a NixOS config is the module's: set the services.boxmaker contract options to the server's values (`boxmaker contract show` prints them) and run `nixos-rebuild switch`";

export function readContractFile(given: string): ContractFile {
  const asked = resolve(given);
  let path: string;
  try {
    path = realpathSync(asked);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") {
      throw new UsageError(
        `no inferproxy config at ${asked}: pass --config with the file inferproxy is started with (its unit's ExecStart); ${NIX_HINT}`,
      );
    }
    throw new ContractFileError(`cannot read ${asked}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  if (path.startsWith("/nix/store/")) throw new ContractFileError(`${asked} is in the Nix store: ${NIX_HINT}`);
  let text: string;
  try {
    if (!statSync(path).isFile()) throw new ContractFileError(`${asked} is not a regular file`);
    text = readFileSync(path, "utf8");
  } catch (err) {
    if (err instanceof ContractFileError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new ContractFileError(`cannot read ${asked}: ${code}${code === "EACCES" ? " (run it as root)" : ""}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ContractFileError(`${asked} is not JSON (${(err as Error).message}); fix it before accepting`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new ContractFileError(`${asked} is not a JSON object; fix it before accepting`);
  }
  const obj = json as Record<string, unknown>;
  const c = obj.contract;
  if (c !== undefined && (typeof c !== "object" || c === null || Array.isArray(c))) {
    throw new ContractFileError(`${asked}: "contract" is not an object; fix it before accepting`);
  }
  const given_ = (c ?? {}) as Partial<Record<ContractKey, unknown>>;
  const contract: ContractValues = {
    template_sha256: typeof given_.template_sha256 === "string" ? given_.template_sha256 : DEFAULTS.template_sha256,
    n_ctx_per_slot: typeof given_.n_ctx_per_slot === "number" ? given_.n_ctx_per_slot : DEFAULTS.n_ctx_per_slot,
    total_slots: typeof given_.total_slots === "number" ? given_.total_slots : DEFAULTS.total_slots,
  };
  const table = obj.contracts;
  if (table !== undefined && !Array.isArray(table)) {
    throw new ContractFileError(`${asked}: "contracts" is not an array; fix it before accepting`);
  }
  const entries: ContractEntryValues[] = [];
  for (const [i, e] of (table ?? []).entries()) {
    const x = e as Partial<ContractEntryValues> | null;
    if (
      typeof x !== "object" ||
      x === null ||
      typeof x.model !== "string" ||
      typeof x.template_sha256 !== "string" ||
      typeof x.n_ctx_per_slot !== "number" ||
      typeof x.total_slots !== "number"
    ) {
      throw new ContractFileError(
        `${asked}: contracts[${i}] needs model, template_sha256, n_ctx_per_slot and total_slots; fix it before accepting`,
      );
    }
    entries.push(x as ContractEntryValues);
  }
  return { path, json: obj, contract, entries };
}

export interface ContractChange {
  key: ContractKey;
  from: string | number;
  to: string | number;
}

export function contractChanges(from: ContractValues, to: ContractValues): ContractChange[] {
  return CONTRACT_KEYS.filter((k) => from[k] !== to[k]).map((key) => ({ key, from: from[key], to: to[key] }));
}

/** What the server reported is a contract inferproxy's config accepts (its schema's patterns). */
export function checkContractValues(v: ContractValues): string | undefined {
  if (!/^[0-9a-f]{64}$/.test(v.template_sha256)) return "llama-server reports no chat template (start it with --jinja)";
  if (!Number.isSafeInteger(v.n_ctx_per_slot) || v.n_ctx_per_slot < 1)
    return `llama-server reports n_ctx_per_slot ${v.n_ctx_per_slot}`;
  if (!Number.isSafeInteger(v.total_slots) || v.total_slots < 1)
    return `llama-server reports total_slots ${v.total_slots}`;
  return undefined;
}

/** The table with `e` in place of its model's entry (other keys of that entry kept), or added at the end. */
function upsertEntry(table: unknown, e: ContractEntryValues): unknown[] {
  const list = Array.isArray(table) ? [...table] : [];
  const i = list.findIndex((x) => (x as { model?: unknown } | null)?.model === e.model);
  if (i < 0) list.push(e);
  else list[i] = { ...(list[i] as object), ...e };
  return list;
}

/**
 * Replaces the file with its `contract` set to `next` (or, given `entry`, the
 * contract table's entry for that model), every other key as it
 * was. Atomically: a new file beside it (same mode, and owner where this
 * process may), synced, renamed over it, the directory synced — a crash
 * leaves the old file or the new one, never half of one, and inferproxy's
 * next start reads a whole config.
 */
export function writeContract(
  file: ContractFile,
  next: ContractValues,
  entry?: { model: string; probe_verdict: string },
): void {
  const json = entry
    ? {
        ...file.json,
        contracts: upsertEntry(file.json.contracts, {
          model: entry.model,
          ...next,
          probe_verdict: entry.probe_verdict,
        }),
      }
    : { ...file.json, contract: { ...((file.json.contract as object | undefined) ?? {}), ...next } };
  const text = `${JSON.stringify(json, null, 2)}\n`;
  const st = statSync(file.path);
  const dir = dirname(file.path);
  const tmp = join(dir, `.${basename(file.path)}.bx-${process.pid}-${randomSuffix()}`);
  let fd: number;
  try {
    fd = openSync(tmp, "wx", 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new ContractFileError(
      `cannot write beside ${file.path} (${code})${code === "EACCES" || code === "EPERM" ? ": run it as root (sudo boxmaker contract accept …)" : ""}`,
    );
  }
  try {
    try {
      writeSync(fd, text);
      // The group that lets the daemon read the file (root:boxmaker 0640) must survive the replacement.
      if (process.getuid?.() === 0 || st.uid === process.getuid?.()) {
        try {
          fchownSync(fd, st.uid, st.gid);
        } catch {
          // Not permitted (a group this user is not in): the file keeps this user's group.
        }
      }
      fchmodSync(fd, st.mode & 0o7777);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file.path);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // already renamed or never made
    }
    throw new ContractFileError(`cannot replace ${file.path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  const d = openSync(dir, "r");
  try {
    fsyncSync(d);
  } finally {
    closeSync(d);
  }
}

/**
 * Eight hex digits for a temporary file's name. node:crypto is fetched only
 * here: imported at the top it loads (some twenty internal modules) on every
 * command, since this module is on the start-up path.
 */
function randomSuffix(): string {
  return process.getBuiltinModule("node:crypto").randomBytes(4).toString("hex");
}
