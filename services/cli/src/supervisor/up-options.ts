import { delimiter, join, relative, resolve, isAbsolute } from "node:path";
import { existsSync } from "node:fs";
import type { StackSettings, Upstream } from "./configs.js";
import { checkSocketPaths, defaultRuntimeDir, defaultStateDir, layoutFor, type Layout } from "./layout.js";
import { DEFAULT_RESTART_POLICY, type RestartPolicyOptions } from "./restart-policy.js";
import { installRoot } from "./install-paths.js";
import { DEFAULT_LOG_ROTATION, type LogRotationLimits } from "../log-rotation-plan.js";
import { UsageError } from "../errors.js";

/** `boxmaker up`'s flags as commander hands them over. */
export interface UpFlags {
  llamaServer?: string;
  model?: string;
  llamaArg?: string[];
  llamaSim?: boolean;
  upstreamSocket?: string;
  upstreamUrl?: string;
  acceptServerContract?: boolean;
  runtimeDir?: string;
  stateDir?: string;
  workspace?: string[];
  sandbox?: string;
  logLevel?: string;
  maxRestarts?: string;
  readyTimeout?: string;
  logMaxSize?: string;
  logKeep?: string;
  /** false with --no-log-compress. */
  logCompress?: boolean;
}

export interface UpPlan {
  layout: Layout;
  upstream: Upstream;
  settings: Omit<StackSettings, "overrides">;
  acceptServerContract: boolean;
  restart: RestartPolicyOptions;
  llamaReadyTimeoutMs: number;
  daemonReadyTimeoutMs: number;
  /** How the processes' logs in the state dir are kept in bounds (log-rotator.ts). */
  logRotation: LogRotationLimits;
}

export interface Host {
  env: NodeJS.ProcessEnv;
  cwd: string;
  home: string;
  tmp: string;
  uid: number;
  /** Boxmaker's own source (brokerd never writes there); default: this checkout or store path. */
  installRoot?: string;
}

export function planUp(f: UpFlags, host: Host): UpPlan {
  const upstream = chooseUpstream(f, host.cwd);
  const layout = layoutFor(
    resolve(host.cwd, f.runtimeDir ?? defaultRuntimeDir(host.env, host.tmp, host.uid)),
    resolve(host.cwd, f.stateDir ?? defaultStateDir(host.env, host.home)),
  );
  const tooLong = checkSocketPaths(layout);
  if (tooLong) throw new UsageError(tooLong);

  const sandboxMode = f.sandbox ?? "bwrap";
  if (sandboxMode !== "bwrap" && sandboxMode !== "none") throw new UsageError("--sandbox: bwrap | none");
  let sandbox: StackSettings["sandbox"] = { mode: "none" };
  if (sandboxMode === "bwrap") {
    const bwrapPath = findOnPath("bwrap", host.env.PATH ?? "");
    if (!bwrapPath)
      throw new UsageError(
        "bwrap (bubblewrap) not found on PATH; install it, or pass --sandbox none to run tools unsandboxed",
      );
    sandbox = { mode: "bwrap", bwrapPath };
  }

  const workspaceRoots = (f.workspace?.length ? f.workspace : [host.cwd]).map((w) => resolve(host.cwd, w));
  const protectedRoots: Array<[string, string]> = [
    [host.installRoot ?? installRoot, "Boxmaker's own source"],
    [layout.stateDir, "Boxmaker's state directory"],
    [layout.runtimeDir, "Boxmaker's runtime directory"],
    ["/etc/boxmaker", "Boxmaker's configuration"],
  ];
  for (const w of workspaceRoots) {
    // brokerd refuses it too; said here so the person learns it before anything starts.
    if (host.home && within(w, resolve(host.home)))
      throw new UsageError(
        `the workspace ${w} ${w === resolve(host.home) ? "is" : "contains"} your home directory: the agent could plant shell start-up files, git config and autostart entries there; ` +
          `run \`boxmaker up\` from your project's directory or pass --workspace DIR`,
      );
    const hit = protectedRoots.find(([p]) => within(p, w));
    if (hit) {
      throw new UsageError(
        `the workspace ${w} is inside ${hit[1]} (${hit[0]}), which the agent may never write to; ` +
          `run \`boxmaker up\` from your project's directory or pass --workspace DIR`,
      );
    }
  }

  const maxRestarts = positiveInt("--max-restarts", f.maxRestarts, DEFAULT_RESTART_POLICY.maxRestarts, true);
  const readyTimeoutS = positiveInt("--ready-timeout", f.readyTimeout, 900, false);
  const logRotation: LogRotationLimits = {
    maxBytes: f.logMaxSize === undefined ? DEFAULT_LOG_ROTATION.maxBytes : parseSize("--log-max-size", f.logMaxSize),
    keep: positiveInt("--log-keep", f.logKeep, DEFAULT_LOG_ROTATION.keep, true),
    compress: f.logCompress ?? DEFAULT_LOG_ROTATION.compress,
  };
  return {
    layout,
    upstream,
    settings: {
      workspaceRoots,
      sandbox,
      logLevel: f.logLevel ?? "info",
    },
    acceptServerContract: !!f.acceptServerContract,
    restart: { ...DEFAULT_RESTART_POLICY, maxRestarts },
    // Loading a large model takes minutes, and inferproxy is not ready before the model is;
    // brokerd and loopd start in seconds whatever the model does.
    llamaReadyTimeoutMs: readyTimeoutS * 1000,
    daemonReadyTimeoutMs: 60_000,
    logRotation,
  };
}

function chooseUpstream(f: UpFlags, cwd: string): Upstream {
  const chosen = [
    f.llamaServer && "--llama-server",
    f.llamaSim && "--llama-sim",
    f.upstreamSocket && "--upstream-socket",
    f.upstreamUrl && "--upstream-url",
  ].filter(Boolean);
  if (chosen.length !== 1) {
    throw new UsageError(
      chosen.length
        ? `choose one of ${chosen.join(", ")}`
        : "say which model server to use: --llama-server BIN --model PATH, --llama-sim, --upstream-socket PATH or --upstream-url URL",
    );
  }
  if ((f.model || f.llamaArg?.length) && !f.llamaServer)
    throw new UsageError("--model and --llama-arg go with --llama-server");
  if (f.llamaServer) {
    if (!f.model) throw new UsageError("--llama-server needs --model PATH");
    return { kind: "llama-server", bin: f.llamaServer, model: resolve(cwd, f.model), extraArgs: f.llamaArg ?? [] };
  }
  if (f.llamaSim) return { kind: "llama-sim" };
  if (f.upstreamSocket) return { kind: "socket", path: resolve(cwd, f.upstreamSocket) };
  if (!/^https?:\/\//.test(f.upstreamUrl!)) throw new UsageError("--upstream-url must start with http:// or https://");
  return { kind: "url", url: f.upstreamUrl! };
}

function positiveInt(flag: string, v: string | undefined, def: number, zeroOk: boolean): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < (zeroOk ? 0 : 1))
    throw new UsageError(`${flag} needs a ${zeroOk ? "non-negative" : "positive"} integer`);
  return n;
}

const UNITS: Record<string, number> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };
/** A log's rotation limit rotating every few lines would only churn the disk. */
const MIN_LOG_BYTES = 1024;

/** "16M", "64KiB", "1.5G", "70000": binary units, as `status` shows sizes. */
function parseSize(flag: string, v: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(?:([kmg])(?:i?b)?|b)?$/i.exec(v.trim());
  const bytes = m ? Math.floor(Number(m[1]) * UNITS[(m[2] ?? "").toLowerCase()]!) : Number.NaN;
  if (!(bytes >= MIN_LOG_BYTES))
    throw new UsageError(`${flag} needs a size of at least 1K, such as 64K, 16M or 1G (not ${JSON.stringify(v)})`);
  return bytes;
}

export function findOnPath(bin: string, path: string): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir && existsSync(join(dir, bin))) return join(dir, bin);
  }
  return undefined;
}

/** `inner` is `outer` or below it. */
function within(outer: string, inner: string): boolean {
  const r = relative(outer, inner);
  return r === "" || (!r.startsWith("..") && !isAbsolute(r));
}
