import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { makeConfiguredDir, type Logger } from "@boxmaker/common";
import { Approvals } from "./approvals.js";
import { AuditLog, undoRecord } from "./audit.js";
import { BlobStore } from "./blobs.js";
import { checkBoundary } from "./boundary.js";
import type { CallOutcome, CallRequest } from "./call-outcome.js";
import { CallPipeline } from "./call-pipeline.js";
import { Checkpoints } from "./checkpoints.js";
import type { BrokerConfig } from "./config-types.js";
import { type Disclosure, disclosureFile } from "./disclosure.js";
import { ToolSearch, type Ranked } from "./find-tool.js";
import { Hooks } from "./hooks/hooks.js";
import { HookTrust } from "./hooks/project-file.js";
import { openMcpServers, type McpServers } from "./mcp/servers.js";
import { connectionLine } from "./net-proxy/audit-line.js";
import { NetProxy } from "./net-proxy/server.js";
import { checkHomeWorkspace } from "./home-workspace.js";
import { unwritableRoots } from "./workspace-writable.js";
import { PathGuard } from "./policy/paths.js";
import { protectionOf } from "./policy/protected-paths.js";
import { checkBrokerConfig } from "./config-check.js";
import { unsandboxedWarning } from "./unsandboxed-warning.js";
import { BLOB_READERS } from "./result-cap.js";
import { Sandbox } from "./sandbox.js";
import { ResultSecrets } from "./secrets/result-secrets.js";
import { ProposalStore, type ProposalRecord } from "./staging.js";
import type { ToolTable } from "./tool-table.js";
import { builtinTable } from "./tools/index.js";
import { buildToolsArray, type ToolsArray } from "./tools-array.js";

/** The checkout or store path brokerd runs from: its own source is never writable by its tools. */
const INSTALL_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/**
 * Everything brokerd decides, in process: the gRPC service is a thin mapping
 * onto this, and the benchmark measures this directly. The work itself lives
 * in the call pipeline (tool calls) and approvals (a person's decisions);
 * this object opens the stores they share and answers the operator's queries.
 */
export class Broker {
  readonly toolsArray: ToolsArray;
  readonly checkpoints: Checkpoints;
  private readonly tools: ToolSearch;
  private readonly pipeline: CallPipeline;
  private readonly approvals: Approvals;
  readonly hooks: Hooks;

  private constructor(
    readonly config: BrokerConfig,
    readonly table: ToolTable,
    readonly guard: PathGuard,
    readonly blobs: BlobStore,
    readonly proposals: ProposalStore,
    readonly sandbox: Sandbox,
    readonly mcp: McpServers,
    private readonly audit: AuditLog,
    private readonly disclosure: Disclosure,
    secrets: ResultSecrets,
    log: Logger,
  ) {
    // Computed once: the epoch's array depends on the config alone, never on MCP servers.
    this.toolsArray = buildToolsArray(table.core());
    this.checkpoints = new Checkpoints(join(config.state_dir, "checkpoints"), config.checkpoints);
    if (this.checkpoints.pruned)
      log.info(
        { deleted: this.checkpoints.pruned, kept: this.checkpoints.stat().changes },
        "checkpoints of sessions past their retention deleted",
      );
    this.tools = new ToolSearch(table, log);
    this.hooks = new Hooks({
      hooks: config.hooks,
      roots: guard.roots,
      secrets: guard.secretIds,
      sandbox,
      trust: new HookTrust(join(config.state_dir, "hooks-trust.json")),
      log,
      record: audit.record.bind(audit),
    });
    const shared = {
      config,
      guard,
      secrets,
      blobs,
      sandbox,
      log,
      table,
      disclosure,
      proposals,
      checkpoints: this.checkpoints,
      hooks: this.hooks,
      record: audit.record.bind(audit),
    };
    this.pipeline = new CallPipeline({ ...shared, search: this.tools });
    this.approvals = new Approvals(shared);
  }

  static async open(config: BrokerConfig, opts: { log: Logger; configPath?: string }): Promise<Broker> {
    checkBoundary(config);
    checkHomeWorkspace(config);
    makeConfiguredDir(config.state_dir, "state_dir");
    const protectedPaths = [...config.protected_paths, config.state_dir, INSTALL_ROOT];
    if (opts.configPath) protectedPaths.push(opts.configPath);
    const guard = new PathGuard(config.workspace_roots, protectedPaths, config.secret_patterns, protectionOf(config));
    const secrets = new ResultSecrets(config.secrets.allow, guard);
    const audit = new AuditLog(join(config.state_dir, "audit.jsonl"), opts.log, {
      rotateBytes: config.audit_log.rotate_bytes,
      keepFiles: config.audit_log.keep_files,
    });
    const proposals = new ProposalStore(
      join(config.state_dir, "proposals"),
      (file, why) => opts.log.warn({ file, why }, "a damaged proposal file was moved to proposals/quarantine/"),
      config.proposals,
    );
    if (proposals.pruned)
      opts.log.info(
        { deleted: proposals.pruned, kept: proposals.decided },
        "decided proposals past their retention deleted",
      );
    const netProxy = config.sandbox.net_proxy.enabled
      ? new NetProxy({
          config: config.sandbox.net_proxy,
          rules: config.policy.rules,
          dir: join(config.state_dir, "net-proxy"),
          // A host an ask rule names is put to the person as a proposal; approved ones are the session's grants.
          proposals,
          record: (run, command, c, scope) => audit.record(connectionLine(run, command, c, scope)),
          findSecrets: (text) => secrets.find(text),
        })
      : undefined;
    const sandbox = Sandbox.probe(
      config.sandbox,
      guard.roots,
      guard.roots.flatMap((r) => guard.protectedInside(r)),
      () => guard.scan(),
      netProxy,
    );
    const table = builtinTable(config.extra_core_tools);
    checkBrokerConfig(config, table);
    const mcp = await openMcpServers(config, table, opts.log, { sandbox, roots: guard.roots });
    const broker = new Broker(
      config,
      table,
      guard,
      new BlobStore(join(config.state_dir, "blobs"), { capBytes: config.blob_cap_bytes }),
      proposals,
      sandbox,
      mcp,
      audit,
      disclosureFile(join(config.state_dir, "disclosure.jsonl"), config.disclosure.retention_days, opts.log),
      secrets,
      opts.log,
    );
    if (sandbox.state === "unsandboxed")
      opts.log.warn({ sandbox: sandbox.detail }, unsandboxedWarning(process.pid, process.env));
    else if (sandbox.state !== "bwrap") opts.log.warn({ sandbox: sandbox.detail }, "run_command is not sandboxed");
    for (const u of unwritableRoots(guard.roots))
      opts.log.warn(u, `workspace root ${u.root} is not writable, so approved writes there will fail: ${u.fix}`);
    // Never waits on a server: each connects in the background and its tools appear when it is up.
    mcp.start();
    return broker;
  }

  /** find_tool's search without disclosure, for people (`boxmaker tools`). */
  search(query: string, limit: number): Ranked[] {
    return this.tools.search(query, limit);
  }

  call(req: CallRequest, signal: AbortSignal = new AbortController().signal): Promise<CallOutcome> {
    return this.pipeline.call(req, signal);
  }

  /** A text loopd spilled from a session's input; the session may read and grep it from now on. */
  putBlob(session: string, text: string): { hash: string; bytes: number; existed: boolean } {
    const r = this.blobs.putEx(text);
    if (session) this.disclosure.disclose(session, BLOB_READERS);
    return r;
  }

  listProposals(sessionId: string, includeDecided: boolean): ProposalRecord[] {
    return this.approvals.list(sessionId, includeDecided);
  }

  /** A person's decision; approval re-checks everything against the current disk first. */
  decideProposal(id: string, approve: boolean, reason: string): Promise<ProposalRecord> {
    return this.approvals.decide(id, approve, reason);
  }

  /** loopd: the turn waiting on these was cancelled; the pending ones are withdrawn. */
  withdrawProposals(ids: readonly string[], reason: string): ProposalRecord[] {
    return this.approvals.withdraw(ids, reason);
  }

  listChanges(sessionId: string) {
    return this.checkpoints.list(sessionId).map((c) => ({ c, diff: this.checkpoints.diff(c) }));
  }

  undoChanges(sessionId: string, last: number, force: boolean) {
    const out = this.checkpoints.undo(sessionId, last, force, this.guard, this.config.limits.max_file_bytes);
    for (const o of out) this.audit.record(undoRecord(sessionId, o, force));
    return out;
  }

  status() {
    return {
      coreTools: this.table.core().length,
      extendedTools: this.table.extended().length,
      pendingProposals: this.proposals.pending,
      sandbox: `${this.sandbox.state}: ${this.sandbox.detail}`,
      mcpServers: this.mcp.status(),
      toolsSha256: this.toolsArray.sha256,
      retention: this.retention(),
    };
  }

  /** The stores a retention bounds, as `status` shows them: what is kept, its size, the limits. */
  private retention() {
    const cp = this.checkpoints.stat();
    const keep = this.checkpoints.retention;
    const pk = this.proposals.keep;
    return [
      {
        store: "checkpoints",
        dir: join(this.config.state_dir, "checkpoints"),
        entries: cp.changes,
        entriesUnit: `change${cp.changes === 1 ? "" : "s"} in ${cp.sessions} session${cp.sessions === 1 ? "" : "s"}`,
        bytes: BigInt(cp.bytes),
        keepDays: keep.keep_days,
        keepMax: keep.keep_sessions,
        keepMaxUnit: "sessions",
        action: "deleted",
        letGo: BigInt(cp.pruned),
        keys: "checkpoints.keep_days, checkpoints.keep_sessions",
      },
      {
        store: "decided proposals",
        dir: join(this.config.state_dir, "proposals", "decided"),
        entries: this.proposals.decided,
        entriesUnit: this.proposals.decided === 1 ? "proposal" : "proposals",
        bytes: BigInt(this.proposals.decidedBytes),
        keepDays: pk.keep_decided_days,
        keepMax: pk.keep_decided_max,
        keepMaxUnit: "proposals",
        action: "deleted",
        letGo: BigInt(this.proposals.pruned),
        keys: "proposals.keep_decided_days, proposals.keep_decided_max",
      },
    ];
  }

  async close(): Promise<void> {
    await this.mcp.close();
    await this.audit.close();
  }
}
