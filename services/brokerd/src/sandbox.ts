import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, readlinkSync } from "node:fs";
import { type BwrapLayout, bwrapArgs, shellArgv, visibleIn } from "./bwrap-args.js";
import { CLEAN_ENV } from "./clean-env.js";
import type { BrokerConfig } from "./config-types.js";
import { Refused } from "./errors.js";
import type { Bridge } from "./net-proxy/bridge.js";
import type { ConnectionRecord } from "./net-proxy/connection-record.js";
import type { NetProxy } from "./net-proxy/server.js";
import { lateSecrets, uncheckedNotice, withheldNotice } from "./policy/late-secrets.js";
import type { WorkspaceScan } from "./policy/workspace-scan.js";
import { runProcessGroup } from "./process-group.js";

// The command line is its own module; the tests of its shape import it from here, with the Sandbox.
export { bwrapArgs } from "./bwrap-args.js";

export interface SandboxRequest {
  command: string;
  cwd: string;
  timeoutMs: number;
  /** Only these directories of the workspace are there, writable (a rule's `paths`); the rest is not visible. */
  writable?: string[];
  /** The tool call it runs for: the network proxy asks that session's person about a host an ask rule names. */
  scope?: { session: string; callId: string };
}

export interface SandboxResult {
  exitCode: number | null;
  signal: string | null;
  output: string;
  droppedBytes: number;
  timedOut: boolean;
  /** The workspace as the sandbox saw it before the run (bwrap only): what a sweep after it compares with. */
  before?: WorkspaceScan;
  /** The workspace walked again once the run had ended (bwrap only): the sweep's "after". */
  after?: WorkspaceScan;
  /** What the command opened through the network proxy (when it is on). */
  connections?: ConnectionRecord[];
}

export type SandboxState = "bwrap" | "unsandboxed" | "unavailable";

const emptyScan = (): WorkspaceScan => ({
  hidden: [],
  hiddenIds: new Map(),
  readOnly: [],
  pinned: [],
  protectedIds: new Map(),
  gitShaped: new Set(),
});

/** A long-lived program (an MCP server over stdio) in the same sandbox as commands, with its own extra binds. */
export interface WrapRequest {
  argv: string[];
  cwd: string;
  /** Read-only extras (the program's runtime and package directory). */
  ro?: string[];
  /** Writable extras, beyond the workspace. */
  rw?: string[];
  network?: boolean;
}

export class Sandbox {
  private constructor(
    readonly state: SandboxState,
    /** Why, for BrokerStatus and the refusal message. */
    readonly detail: string,
    private readonly config: BrokerConfig["sandbox"],
    private readonly rw: string[],
    private readonly roInside: string[],
    /** Walks the workspace at each run: secrets and protected files appear and vanish between commands. */
    private readonly scan: () => WorkspaceScan = emptyScan,
    /** Commands reach the network through it (bwrap only, sandbox.network off). */
    private readonly netProxy?: NetProxy,
  ) {}

  /**
   * Runs bwrap once with the namespaces brokerd will ask for, so "bwrap is
   * installed but user namespaces are off" is found at start, not on first use.
   */
  static probe(
    config: BrokerConfig["sandbox"],
    rw: string[],
    roInside: string[],
    scan?: () => WorkspaceScan,
    netProxy?: NetProxy,
  ): Sandbox {
    const fallback = (why: string) =>
      config.allow_unsandboxed
        ? new Sandbox(
            "unsandboxed",
            `${why}; running commands unsandboxed (allow_unsandboxed)`,
            config,
            rw,
            roInside,
            scan,
          )
        : new Sandbox(
            "unavailable",
            `${why}; run_command is refused (set sandbox.allow_unsandboxed to override)`,
            config,
            rw,
            roInside,
            scan,
          );
    if (config.mode === "none") return fallback("sandbox.mode is none");
    if (!existsSync(config.bwrap_path)) return fallback(`${config.bwrap_path} does not exist`);
    const r = spawnSync(
      config.bwrap_path,
      [
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-net",
        "--ro-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        "--",
        "/bin/true",
      ],
      { timeout: 10_000, stdio: ["ignore", "ignore", "pipe"] },
    );
    if (r.status !== 0)
      return fallback(
        `bwrap does not work here: ${r.stderr?.toString().trim() || r.error?.message || `exit ${r.status}`}`,
      );
    if (config.network || !config.net_proxy.enabled || !netProxy)
      return new Sandbox("bwrap", `bwrap (${config.network ? "with" : "no"} network)`, config, rw, roInside, scan);
    // Without the bridge a command would have no network at all: said at start, and commands run as without the proxy.
    if (!existsSync(config.net_proxy.socat_path))
      return new Sandbox(
        "bwrap",
        `bwrap (no network: sandbox.net_proxy is on but ${config.net_proxy.socat_path} does not exist; install socat)`,
        config,
        rw,
        roInside,
        scan,
      );
    return new Sandbox("bwrap", "bwrap (network through the allowlist proxy)", config, rw, roInside, scan, netProxy);
  }

  private layout(req: SandboxRequest, view: WorkspaceScan = this.scan()): BwrapLayout {
    const ro: BwrapLayout["ro"] = [];
    for (const path of this.config.ro_paths) {
      const st = lstatSync(path, { throwIfNoEntry: false });
      if (!st) continue;
      ro.push(st.isSymbolicLink() ? { path, symlinkTo: readlinkSync(path) } : { path });
    }
    return {
      ro,
      rw: this.rw,
      roInside: this.roInside,
      hidden: view.hidden,
      readOnly: view.readOnly,
      pinned: view.pinned,
      limits: this.config.limits,
      network: this.config.network,
      cwd: req.cwd,
      command: req.command,
      ...(req.writable ? { writable: req.writable } : {}),
    };
  }

  /**
   * The bwrap command line that runs `req.argv` inside the sandbox, for a
   * caller that spawns it itself and keeps its stdio. Secrets are masked as of
   * now. Only valid when state is "bwrap".
   */
  wrap(req: WrapRequest): { command: string; args: string[] } {
    if (this.state !== "bwrap") throw new Refused("sandbox:unavailable", `no sandbox is available (${this.detail})`);
    const l = this.layout({ command: "", cwd: req.cwd, timeoutMs: 0 });
    const have = (ps: string[] | undefined) => (ps ?? []).filter((p) => existsSync(p));
    const quote = (w: string) => `'${w.replaceAll("'", `'\\''`)}'`;
    // Extras bind after /tmp's tmpfs (with the protected paths), so one under /tmp stays visible.
    return {
      command: this.config.bwrap_path,
      args: bwrapArgs({
        ...l,
        rw: [...l.rw, ...have(req.rw)],
        roInside: [...have(req.ro), ...l.roInside],
        network: req.network ?? false,
        // A server gets a command's rlimits: the same ulimit shell sets them, then execs the server's quoted words.
        argv: l.limits ? shellArgv(`exec ${req.argv.map(quote).join(" ")}`, l.limits) : req.argv,
      }),
    };
  }

  run(req: SandboxRequest, signal?: AbortSignal): Promise<SandboxResult> {
    if (this.state === "unavailable")
      throw new Refused("sandbox:unavailable", `no sandbox is available (${this.detail})`);
    const before = this.state === "bwrap" ? this.scan() : undefined;
    if (!before) return this.spawn(req, signal);
    if (!this.netProxy) return this.spawn(req, signal, before).then((r) => this.unlessLate(req, before, r));
    const proxy = this.netProxy;
    return (async () => {
      const px = await proxy.open(req.command, req.scope, before.hidden);
      const bridge = {
        socket: px.socketPath,
        socat: this.config.net_proxy.socat_path,
        port: this.config.net_proxy.port,
      };
      let r: SandboxResult;
      try {
        r = await this.spawn(req, signal, before, bridge);
      } finally {
        await px.close();
      }
      return { ...this.unlessLate(req, before, r), connections: px.connections };
    })();
  }

  /**
   * The masks are mounts made as the command starts: a secret someone else
   * creates while it runs (a second command, the person, an editor's save) has
   * none, and the command may have read it. No mount can cover a file that does
   * not exist yet, so the workspace is walked again once the run has ended and,
   * if a secret appeared that the command could see, nothing it printed is
   * returned — whatever encoding it chose, the output carries no byte of it.
   * A walk that fails withholds too: unknown is not "none appeared".
   */
  private unlessLate(req: SandboxRequest, before: WorkspaceScan, r: SandboxResult): SandboxResult {
    let after: WorkspaceScan;
    try {
      after = this.scan();
    } catch (err) {
      return { ...r, output: uncheckedNotice(err instanceof Error ? err.message : String(err)), droppedBytes: 0 };
    }
    const late = lateSecrets(before, after, visibleIn(req.writable));
    if (!late.length) return { ...r, after };
    return { ...r, after, output: withheldNotice(late), droppedBytes: 0 };
  }

  private spawn(
    req: SandboxRequest,
    signal?: AbortSignal,
    before?: WorkspaceScan,
    bridge?: Bridge,
  ): Promise<SandboxResult> {
    const [command, args] = before
      ? [this.config.bwrap_path, bwrapArgs({ ...this.layout(req, before), ...(bridge ? { bridge } : {}) })]
      : ["/bin/sh", shellArgv(req.command, this.config.limits).slice(1)];
    // The command's shell ends and whatever it left running in its group goes with it
    // (bwrap's pid namespace does the same for sandboxed runs).
    return runProcessGroup({
      command,
      args,
      env: CLEAN_ENV,
      cwd: req.cwd,
      outputCapBytes: this.config.output_cap_bytes,
      timeoutMs: req.timeoutMs,
      signal,
    }).then((r) => ({
      exitCode: r.exitCode,
      signal: r.signal,
      output: r.output,
      droppedBytes: r.droppedBytes,
      timedOut: r.timedOut,
      ...(before ? { before } : {}),
    }));
  }
}
