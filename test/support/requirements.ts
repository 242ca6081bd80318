// Tests that need a system tool declare it here instead of failing on a machine
// without it. Locally a missing tool skips those tests with one line that names
// the tool and how to install it; the run ends with a summary of every skip
// (test/support/skip-summary.ts). Under CI (CI=true) a missing tool is an error,
// so CI can never go green by skipping.
import { spawnSync } from "node:child_process";
import { appendFileSync } from "node:fs";
import { inject } from "vitest";

export type Requirement =
  | "bwrap"
  | "socat"
  | "curl"
  | "git"
  | "tmux"
  | "fish"
  | "zsh"
  | "less"
  | "python3"
  | "systemd-analyze"
  | "nix-instantiate"
  | "llama-server";

const HOW_TO_GET: Record<Requirement, string> = {
  bwrap: "apt-get install -y bubblewrap",
  socat: "apt-get install -y socat",
  curl: "apt-get install -y curl",
  git: "apt-get install -y git",
  tmux: "apt-get install -y tmux",
  fish: "apt-get install -y fish",
  zsh: "apt-get install -y zsh",
  less: "apt-get install -y less",
  python3: "apt-get install -y python3",
  "systemd-analyze": "apt-get install -y systemd",
  "nix-instantiate": "apt-get install -y nix-bin",
  "llama-server": "npm run llama-server:build (builds a real llama-server and tiny models, ~10 min once)",
};

const found = new Map<string, string | undefined>();

/** Where `tool` is on PATH, or undefined: tests use this path so that removing a tool from PATH really removes it. */
export function toolPath(tool: string): string | undefined {
  if (!found.has(tool)) {
    const r = spawnSync("sh", ["-c", `command -v ${tool}`], { encoding: "utf8" });
    found.set(tool, r.status === 0 ? r.stdout.trim() || undefined : undefined);
  }
  return found.get(tool);
}

const onPath = (tool: string): boolean => toolPath(tool) !== undefined;

export const underCi = (): boolean => /^(1|true|yes)$/i.test(process.env.CI ?? "");

/**
 * Whether every tool in `needs` is available. When one is not: under CI this
 * throws (the test file fails, naming the tool); otherwise it records one skip
 * line for the summary and returns false, for `describe.skipIf(!requires(...))`.
 * `present` lets a caller decide availability itself (the real llama-server is
 * a built file, not a command on PATH).
 */
export function requires(
  what: string,
  needs: Requirement[],
  present: (tool: Requirement) => boolean = onPath,
): boolean {
  const missing = needs.filter((t) => !present(t));
  if (missing.length === 0) return true;
  const needsLine = `needs ${missing.map((t) => `${t} (${HOW_TO_GET[t]})`).join(", ")}`;
  if (underCi())
    throw new Error(`${what} ${needsLine}; under CI=true a missing tool fails the run instead of skipping`);
  // One line per skip in the end-of-run summary (test/support/skip-summary.ts), not one per worker here.
  recordSkip(`${what}: skipped, ${needsLine}`);
  return false;
}

/**
 * For a tier that needs something of the machine rather than a tool on PATH: the
 * systemd tier boots a container, which needs root, systemd-nspawn and a kernel
 * that lets it. `whyNot` is undefined where the machine can, else one line saying
 * why not. Unlike requires(), this skips under CI too: a CI machine that cannot
 * boot containers must not turn the run red, while one that can runs the tier
 * (.ci/run prepares it). The line goes into the end-of-run summary.
 */
export function machineCan(what: string, whyNot: string | undefined): boolean {
  if (whyNot === undefined) return true;
  recordSkip(`${what}: skipped, ${whyNot}`);
  return false;
}

function recordSkip(line: string): void {
  const file = skipsFile();
  if (file) appendFileSync(file, `${line}\n`);
}

function skipsFile(): string | undefined {
  try {
    return inject("boxmakerSkipsFile");
  } catch {
    return undefined; // outside vitest's runner (a script importing test support)
  }
}

declare module "vitest" {
  export interface ProvidedContext {
    boxmakerSkipsFile: string;
  }
}
