import { createHash } from "node:crypto";
import { closeSync, readFileSync, readSync } from "node:fs";
import { join } from "node:path";
import { atomicWrite, messageOf, parseConfig, Type } from "@boxmaker/common";
import { openFileAt, type SecretCheck } from "../tools/fs-walk.js";
import { projectHooksSchema, type ProjectHooksConfig } from "./schema.js";
import type { HooksConfig } from "./types.js";

/** Where a workspace keeps its own hooks (a protected path: the model never writes it). */
export const PROJECT_HOOKS_FILE = ".boxmaker/hooks.json";
const MAX_BYTES = 256 * 1024;

const projectSchema = Type.Object({ hooks: Type.Optional(projectHooksSchema) }, { additionalProperties: false });

/** A project's hooks as the operator's shape: never unsandboxed. */
function asOperatorHooks(p: ProjectHooksConfig): HooksConfig {
  const out: HooksConfig = {};
  for (const [event, list] of Object.entries(p) as [keyof ProjectHooksConfig, ProjectHooksConfig["pre_tool"]][]) {
    if (list) out[event] = list.map((h) => ({ ...h, unsandboxed: false }));
  }
  return out;
}

type ProjectHooksState = "absent" | "untrusted" | "trusted" | "invalid";

export interface ProjectHooks {
  root: string;
  file: string;
  state: ProjectHooksState;
  /** Of the bytes read now: what a person trusts is exactly this. */
  sha256: string;
  text: string;
  hooks: HooksConfig;
  /** Why the file is invalid or unreadable. */
  error: string;
}

/**
 * The person's approvals of project hook files: file path → the sha256 of the
 * content they saw. A changed file has another hash, so it is untrusted again
 * until it is approved once more.
 */
export class HookTrust {
  constructor(private readonly path: string) {}

  private load(): Record<string, string> {
    try {
      const v = JSON.parse(readFileSync(this.path, "utf8")) as { trusted?: Record<string, string> };
      return v.trusted && typeof v.trusted === "object" ? v.trusted : {};
    } catch {
      // Missing or damaged: nothing is trusted, which fails closed.
      return {};
    }
  }

  has(file: string, sha256: string): boolean {
    return this.load()[file] === sha256;
  }

  set(file: string, sha256: string): void {
    const trusted = { ...this.load(), [file]: sha256 };
    atomicWrite(this.path, `${JSON.stringify({ trusted }, null, 2)}\n`, 0o600);
  }
}

/**
 * Reads a root's hook file through the same descriptor walk the file tools use
 * (no symlink followed, no FIFO opened), hashes the bytes read and parses those
 * same bytes, so what runs is what was hashed.
 */
export function readProjectHooks(root: string, trust: HookTrust, secrets: SecretCheck): ProjectHooks {
  const file = join(root, PROJECT_HOOKS_FILE);
  const base = { root, file, sha256: "", text: "", hooks: {}, error: "" };
  let bytes: Buffer;
  try {
    const { fd, st } = openFileAt(root, PROJECT_HOOKS_FILE, secrets);
    try {
      if (st.size > MAX_BYTES) return { ...base, state: "invalid", error: `larger than ${MAX_BYTES} bytes` };
      bytes = Buffer.alloc(st.size);
      let off = 0;
      while (off < bytes.length) {
        const n = readSync(fd, bytes, off, bytes.length - off, off);
        if (n === 0) break;
        off += n;
      }
      bytes = bytes.subarray(0, off);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || /no such file|does not exist/i.test(messageOf(err))) return { ...base, state: "absent" };
    return { ...base, state: "invalid", error: messageOf(err) };
  }
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const text = bytes.toString("utf8");
  const seen = { ...base, sha256, text };
  let hooks: HooksConfig;
  try {
    hooks = asOperatorHooks(parseConfig(projectSchema, JSON.parse(text), PROJECT_HOOKS_FILE).hooks ?? {});
  } catch (err) {
    return { ...seen, state: "invalid", error: messageOf(err) };
  }
  return { ...seen, hooks, state: trust.has(file, sha256) ? "trusted" : "untrusted" };
}
