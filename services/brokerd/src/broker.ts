import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError, messageOf, type Logger } from "@boxmaker/common";
import { AuditLog, type AuditRecord } from "./audit.js";
import { BLOB_PREFIX, BlobStore } from "./blobs.js";
import { normalizeCallToolArgs, resolveCallTool } from "./call-tool.js";
import type { BrokerConfig } from "./config.js";
import { checkBoundary } from "./boundary.js";
import { Disclosure } from "./disclosure.js";
import { Checkpoints } from "./checkpoints.js";
import { excerpt } from "./excerpt.js";
import { ToolIndex, formatFound, type Ranked } from "./find-tool.js";
import { McpManager } from "./mcp/manager.js";
import { PathGuard } from "./policy/paths.js";
import { decide, type Decision } from "./policy/rules.js";
import { Sandbox } from "./sandbox.js";
import { ProposalStore, staleReason, type ProposalRecord } from "./staging.js";
import { ProposalNotFound, ProposalNotPending, Refused, ToolError } from "./errors.js";
import { type Plan, type ToolContext, type ToolDef, type ToolTable, type ToolText } from "./tool-table.js";
import { builtinTable } from "./tools/index.js";
import { buildToolsArray, type ToolsArray } from "./tools-array.js";
import { checkArguments } from "./validate.js";

export interface CallRequest {
  sessionId: string;
  callId: string;
  name: string;
  /** The raw text the model produced. */
  argumentsJson: string;
}

export type CallDecision = "allowed" | "denied" | "staged";

export interface CallOutcome {
  decision: CallDecision;
  content: string;
  isError: boolean;
  rule: string;
  proposalId: string;
  blobSha256: string;
  durationMs: number;
  resolvedName: string;
}

/** The checkout or store path brokerd runs from: its own source is never writable by its tools. */
const INSTALL_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/** What a dispatch step decides; call() adds timing and the resolved name. */
type Outcome = Omit<CallOutcome, "durationMs" | "resolvedName" | "proposalId" | "blobSha256"> & {
  proposalId?: string;
  blobSha256?: string;
};

const ALLOW_ALL = { read: "allow", write: "allow", exec: "allow", network: "allow" } as const;
const STRENGTH = { allow: 0, ask: 1, deny: 2 } as const;

const denied = (rule: string, content: string): Outcome => ({ decision: "denied", content, isError: true, rule });

function describeTargets(plan: Plan): string {
  if (plan.command !== undefined) return `(command: ${plan.command})`;
  if (plan.paths.length) return `on ${plan.paths.map((p) => p.rel).join(", ")}`;
  if (plan.hosts?.length) return `(hosts: ${plan.hosts.join(", ")})`;
  return "";
}

/**
 * Everything brokerd decides, in process: the gRPC service is a thin mapping
 * onto this, and the benchmark measures this directly.
 */
export class Broker {
  readonly toolsArray: ToolsArray;
  private index: ToolIndex | undefined;
  private indexVersion = -1;
  private readonly deciding = new Set<string>();
  readonly checkpoints: Checkpoints;

  private constructor(
    readonly config: BrokerConfig,
    readonly table: ToolTable,
    readonly guard: PathGuard,
    readonly blobs: BlobStore,
    readonly proposals: ProposalStore,
    readonly sandbox: Sandbox,
    readonly mcp: McpManager,
    private readonly audit: AuditLog,
    private readonly disclosure: Disclosure,
    private readonly log: Logger,
  ) {
    // Computed once: the epoch's array depends on the config alone, never on MCP servers.
    this.toolsArray = buildToolsArray(table.core());
    this.checkpoints = new Checkpoints(join(config.state_dir, "checkpoints"));
  }

  static async open(config: BrokerConfig, opts: { log: Logger; configPath?: string }): Promise<Broker> {
    checkBoundary(config);
    try {
      mkdirSync(config.state_dir, { recursive: true, mode: 0o750 });
    } catch (err) {
      throw new ConfigError(`key "state_dir": cannot create ${config.state_dir}: ${messageOf(err)}`, { cause: err });
    }
    const protectedPaths = [...config.protected_paths, config.state_dir, INSTALL_ROOT];
    if (opts.configPath) protectedPaths.push(opts.configPath);
    const guard = new PathGuard(config.workspace_roots, protectedPaths, config.secret_patterns);
    const sandbox = Sandbox.probe(
      config.sandbox,
      guard.roots,
      guard.roots.flatMap((r) => guard.protectedInside(r)),
      () => guard.secretsInside(),
    );
    const table = builtinTable(config.extra_core_tools);
    const mcp = new McpManager(config.mcp_servers, config.mcp_reconnect, table, opts.log, {
      sandbox,
      roots: guard.roots,
    });
    const broker = new Broker(
      config,
      table,
      guard,
      new BlobStore(join(config.state_dir, "blobs"), { capBytes: config.blob_cap_bytes }),
      new ProposalStore(join(config.state_dir, "proposals"), (file, why) =>
        opts.log.warn({ file, why }, "a damaged proposal file was moved to proposals/quarantine/"),
      ),
      sandbox,
      mcp,
      new AuditLog(join(config.state_dir, "audit.jsonl"), opts.log),
      new Disclosure(join(config.state_dir, "disclosure.jsonl")),
      opts.log,
    );
    if (sandbox.state !== "bwrap") opts.log.warn({ sandbox: sandbox.detail }, "run_command is not sandboxed");
    // Never waits on a server: each connects in the background and its tools appear when it is up.
    mcp.start();
    return broker;
  }

  private searchIndex(): ToolIndex {
    if (!this.index || this.indexVersion !== this.table.version) {
      this.index = new ToolIndex(this.table.extended());
      this.indexVersion = this.table.version;
    }
    return this.index;
  }

  /** find_tool's search without disclosure, for people (`boxmaker tools`). */
  search(query: string, limit: number): Ranked[] {
    return this.searchIndex().search(query, limit);
  }

  async call(req: CallRequest, signal: AbortSignal = new AbortController().signal): Promise<CallOutcome> {
    const t0 = performance.now();
    let resolvedName = req.name;
    let targets: Plan | undefined;
    let out: Outcome;
    try {
      out = await this.dispatch(
        req,
        signal,
        (n) => (resolvedName = n),
        (p) => (targets = p),
      );
    } catch (err) {
      if (signal.aborted) throw err;
      this.log.error({ err, tool: req.name }, "tool call failed unexpectedly");
      out = {
        decision: "allowed",
        content: `${req.name} failed: ${messageOf(err)}`,
        isError: true,
        rule: "tool:crashed",
      };
    }
    const outcome: CallOutcome = {
      proposalId: "",
      blobSha256: "",
      ...out,
      durationMs: performance.now() - t0,
      resolvedName,
    };
    this.record({
      kind: "call",
      session: req.sessionId,
      call_id: req.callId,
      tool: req.name,
      ...(resolvedName !== req.name ? { resolved: resolvedName } : {}),
      decision: outcome.decision,
      rule: outcome.rule,
      duration_ms: Math.round(outcome.durationMs * 1000) / 1000,
      result_bytes: Buffer.byteLength(outcome.content),
      is_error: outcome.isError,
      ...(outcome.blobSha256 ? { blob: outcome.blobSha256 } : {}),
      ...(outcome.proposalId ? { proposal: outcome.proposalId } : {}),
      ...(targets?.paths.length ? { paths: targets.paths.map((p) => p.rel) } : {}),
      ...(targets?.hosts?.length ? { hosts: targets.hosts } : {}),
    });
    return outcome;
  }

  private record(r: AuditRecord): void {
    this.audit.record(r);
  }

  private async dispatch(
    req: CallRequest,
    signal: AbortSignal,
    resolved: (n: string) => void,
    planned?: (p: Plan) => void,
  ): Promise<Outcome> {
    let floor: Decision | undefined;
    const max = this.config.limits.max_argument_bytes;
    if (Buffer.byteLength(req.argumentsJson) > max) {
      return denied(
        "limit:argument-size",
        `The arguments are ${Buffer.byteLength(req.argumentsJson)} bytes, above the ${max}-byte limit. Split the work into smaller calls (e.g. write a file in parts with edit_file).`,
      );
    }
    let args: unknown;
    try {
      args = req.argumentsJson.trim() === "" ? {} : JSON.parse(req.argumentsJson);
    } catch (err) {
      return denied(
        "arguments:not-json",
        `The arguments of ${req.name} are not valid JSON (${messageOf(err)}). Send one JSON object matching the tool's parameters.`,
      );
    }
    const tool = this.table.get(req.name);
    if (!tool?.core) {
      const hint = tool
        ? `Use call_tool({"name": "${req.name}", "arguments": {…}}) after find_tool has shown it.`
        : "Tools not in your list are reached with find_tool, then call_tool.";
      return denied("tool:not-declared", `"${req.name}" is not one of your tools. ${hint}`);
    }
    if (tool.kind === "meta") {
      // Operator rules name meta tools too: a deny on find_tool or call_tool holds.
      const gate = decide(this.config.policy.rules, ALLOW_ALL, {
        tool: tool.name,
        risk: tool.risk,
        paths: [],
        hosts: [],
      });
      if (gate.effect === "deny" || (gate.effect === "ask" && tool.name === "find_tool")) {
        return denied(
          gate.rule,
          `Denied by policy (${gate.rule}): ${tool.name} is not allowed${gate.effect === "ask" ? " without a person (it cannot be staged)" : ""}. Do not retry it; take another approach or ask the user.`,
        );
      }
      if (gate.effect === "ask") floor = gate;
    }
    if (tool.name === "find_tool") {
      const bad = checkArguments(tool, args);
      if (bad) return denied("arguments:schema", bad);
      const query = (args as { query: string }).query;
      const found = this.searchIndex().search(query, this.config.find_tool_results);
      this.disclosure.disclose(
        req.sessionId,
        found.flatMap((f) => [f.tool.name, ...(f.also ?? [])]),
      );
      return { decision: "allowed", content: formatFound(query, found), isError: false, rule: "meta:find_tool" };
    }
    if (tool.name === "call_tool") {
      args = normalizeCallToolArgs(args);
      const bad = checkArguments(tool, args);
      if (bad) return denied("arguments:schema", bad);
      const r = resolveCallTool(args as { name: string; arguments: unknown }, this.table, (n) =>
        this.disclosure.has(req.sessionId, n),
      );
      if (!r.ok) return denied(r.rule, r.message);
      resolved(r.tool.name);
      if (r.tool.kind === "meta")
        return this.dispatch({ ...req, name: r.tool.name, argumentsJson: JSON.stringify(r.args) }, signal, resolved);
      return this.run(r.tool, r.args, req, signal, floor, planned);
    }
    return this.run(tool, args, req, signal, undefined, planned);
  }

  private context(signal: AbortSignal, tool?: ToolDef): ToolContext {
    const pathRules = this.config.policy.rules.filter((r) => r.paths && r.effect !== "allow");
    const pathRuled =
      tool && pathRules.length
        ? (rel: string, abs: string) => {
            const d = decide(
              pathRules,
              { read: "allow", write: "allow", exec: "allow", network: "allow" },
              { tool: tool.name, risk: tool.risk, paths: [{ rel, abs }], hosts: [] },
            );
            return d.effect !== "allow";
          }
        : undefined;
    return {
      config: this.config,
      guard: this.guard,
      blobs: this.blobs,
      sandbox: this.sandbox,
      signal,
      ...(pathRuled ? { pathRuled } : {}),
    };
  }

  /** Schema, then plan (path checks), then policy; the same sequence runs again at approval. */
  private async check(
    tool: ToolDef,
    args: unknown,
    signal: AbortSignal,
  ): Promise<{ plan: Plan; decision: Decision } | Outcome> {
    const bad = checkArguments(tool, args);
    if (bad) return denied("arguments:schema", bad);
    let plan: Plan;
    try {
      plan = await tool.plan(args, this.context(signal, tool));
    } catch (err) {
      if (err instanceof Refused) return denied(err.rule, `Refused: ${err.message}.`);
      if (err instanceof ToolError) return denied("tool:invalid-call", err.message);
      throw err;
    }
    const decision = decide(this.config.policy.rules, this.config.policy.defaults, {
      tool: tool.name,
      risk: tool.risk,
      paths: plan.paths,
      ...(plan.command !== undefined ? { command: plan.command } : {}),
      hosts: plan.hosts ?? [],
    });
    return { plan, decision };
  }

  private async run(
    tool: ToolDef,
    args: unknown,
    req: CallRequest,
    signal: AbortSignal,
    floor?: Decision,
    planned?: (p: Plan) => void,
  ): Promise<Outcome> {
    const checked = await this.check(tool, args, signal);
    if (!("plan" in checked)) return checked;
    planned?.(checked.plan);
    const { plan } = checked;
    // A rule on call_tool itself (ask) is a floor for whatever it calls.
    const decision = floor && STRENGTH[floor.effect] > STRENGTH[checked.decision.effect] ? floor : checked.decision;
    if (decision.effect === "deny") {
      return denied(
        decision.rule,
        `Denied by policy (${decision.rule}): ${tool.name} ${describeTargets(plan)} is not allowed. Do not retry it; take another approach or ask the user.`,
      );
    }
    if (decision.effect === "ask") {
      const p = this.proposals.stage({
        session_id: req.sessionId,
        call_id: req.callId,
        tool: tool.name,
        arguments_json: JSON.stringify(args),
        preview: plan.preview ?? `${tool.name} ${JSON.stringify(args)}`,
        rule: decision.rule,
        checks: plan.checks ?? {},
      });
      return {
        decision: "staged",
        content: `Staged for review as proposal ${p.id} (${decision.rule}): a person must approve it, and it has NOT been applied yet. Continue with work that does not depend on it, or end your turn and say what is waiting for approval.`,
        isError: false,
        rule: decision.rule,
        proposalId: p.id,
      };
    }
    const r = await this.execute(tool, plan, signal);
    if (!r.isError) this.checkpoint(plan, req.sessionId, req.callId, tool.name, "");
    const capped = this.cap(req.sessionId, tool, r.text);
    return {
      decision: "allowed",
      content: capped.text,
      isError: r.isError,
      rule: decision.rule,
      blobSha256: capped.blob ?? "",
    };
  }

  private async execute(tool: ToolDef, plan: Plan, signal: AbortSignal): Promise<ToolText> {
    try {
      return await plan.execute();
    } catch (err) {
      if (signal.aborted) throw err;
      if (err instanceof Refused) return { text: `Refused: ${err.message}.`, isError: true };
      if (err instanceof ToolError) return { text: err.message, isError: true };
      this.log.error({ err, tool: tool.name }, "tool failed");
      return { text: `${tool.name} failed: ${messageOf(err)}`, isError: true };
    }
  }

  /**
   * Above result_cap_bytes the whole result goes to the blob store and the
   * model gets a verbatim excerpt plus the pointer. read_blob and grep_blob are
   * disclosed with it, so the call_tool shape in the note works immediately.
   */
  private cap(session: string, tool: ToolDef, text: string): { text: string; blob?: string } {
    const bytes = Buffer.byteLength(text);
    const cap = this.config.result_cap_bytes;
    if (tool.selfCapped || bytes <= cap) return { text };
    const hash = this.blobs.put(text);
    const ref = `${BLOB_PREFIX}${hash}`;
    const ex = excerpt(text, Math.max(256, cap - 700));
    this.disclosure.disclose(session, ["read_blob", "grep_blob"]);
    const shown = ex.kind === "errors" ? "the error lines with context and the end" : "the start and the end";
    const note =
      `[${tool.name} result: ${bytes} bytes, ${ex.lines} lines; showing ${shown}. The full result is stored as ${ref}. ` +
      `Read more with call_tool({"name": "read_blob", "arguments": {"blob": "${ref}", "start_line": 1, "end_line": 200}}) ` +
      `or call_tool({"name": "grep_blob", "arguments": {"blob": "${ref}", "pattern": "…"}}).]`;
    return { text: `${note}\n${ex.text}`, blob: hash };
  }

  /** A text loopd spilled from a session's input; the session may read and grep it from now on. */
  putBlob(session: string, text: string): { hash: string; bytes: number; existed: boolean } {
    const r = this.blobs.putEx(text);
    if (session) this.disclosure.disclose(session, ["read_blob", "grep_blob"]);
    return r;
  }

  listProposals(sessionId: string, includeDecided: boolean): ProposalRecord[] {
    return this.proposals.list({ sessionId, includeDecided });
  }

  /**
   * A person's decision. Approval re-runs every check against the current
   * disk: schema, path resolution (a symlink swapped since staging resolves
   * elsewhere), policy (a deny added since wins), and the staged facts (the
   * file's hash). Only then does the staged action run.
   */
  async decideProposal(id: string, approve: boolean, reason: string): Promise<ProposalRecord> {
    const p = this.proposals.get(id);
    if (!p) throw new ProposalNotFound(id);
    if (p.state !== "pending" || this.deciding.has(id)) throw new ProposalNotPending(id, p.state);
    this.deciding.add(id);
    const t0 = performance.now();
    try {
      const done = approve
        ? await this.approve(p)
        : this.proposals.finish(p, "rejected", `Rejected by a person${reason ? `: ${reason}` : ""}.`, reason);
      this.record({
        kind: "proposal",
        session: p.session_id,
        call_id: p.call_id,
        tool: p.tool,
        decision: done.state === "applied" ? "approved" : done.state === "rejected" ? "rejected" : "failed",
        rule: p.rule,
        duration_ms: Math.round((performance.now() - t0) * 1000) / 1000,
        result_bytes: Buffer.byteLength(done.result),
        is_error: done.state !== "applied",
        proposal: p.id,
      });
      return done;
    } finally {
      this.deciding.delete(id);
    }
  }

  private async approve(p: ProposalRecord): Promise<ProposalRecord> {
    const fail = (why: string) => this.proposals.finish(p, "failed", `Not applied: ${why}`);
    const tool = this.table.get(p.tool);
    if (!tool) return fail(`the tool ${p.tool} is no longer available.`);
    const signal = new AbortController().signal;
    const checked = await this.check(tool, JSON.parse(p.arguments_json), signal);
    if (!("plan" in checked)) return fail(checked.content);
    if (checked.decision.effect === "deny") return fail(`policy now denies it (${checked.decision.rule}).`);
    const stale = staleReason(p.checks, checked.plan.checks);
    if (stale) return fail(`${stale}. Nothing was changed; the model can stage it again.`);
    let r: ToolText;
    try {
      r = await checked.plan.execute();
    } catch (err) {
      if (err instanceof Refused || err instanceof ToolError) return fail(`${err.message}.`);
      this.log.error({ err, tool: tool.name }, "approved action failed");
      return fail(`${tool.name} failed: ${messageOf(err)}`);
    }
    // An MCP call that errored did not do what was approved (the server was down, refused or timed out,
    // or the tool itself failed): that is a failure to apply, reported with the server's words.
    if (tool.kind === "mcp" && r.isError) return fail(`${tool.name} failed: ${r.text}`);
    if (!r.isError) this.checkpoint(checked.plan, p.session_id, p.call_id, tool.name, p.id);
    // It ran: a command's non-zero exit is part of its result, not a failure to apply.
    return this.proposals.finish(p, "applied", this.cap(p.session_id, tool, r.text).text);
  }

  /** Keeps an applied write's before and after content, so a person can undo it (`boxmaker undo`). */
  private checkpoint(plan: Plan, session: string, callId: string, tool: string, proposalId: string): void {
    const c = plan.change;
    if (!c) return;
    try {
      const rec = this.checkpoints.record(
        {
          session_id: session,
          call_id: callId,
          tool,
          proposal_id: proposalId,
          root: c.path.root,
          rel: c.path.rel,
          abs: c.path.abs,
        },
        c.before,
        c.after,
      );
      this.log.info({ session, change: rec.id, path: c.path.rel }, "checkpoint kept");
    } catch (err) {
      // The write happened; a missing checkpoint only means it cannot be undone.
      this.log.error({ err, session, path: c.path.rel }, "could not keep a checkpoint");
    }
  }

  listChanges(sessionId: string) {
    return this.checkpoints.list(sessionId).map((c) => ({ c, diff: this.checkpoints.diff(c) }));
  }

  undoChanges(sessionId: string, last: number, force: boolean) {
    const out = this.checkpoints.undo(sessionId, last, force, this.guard, this.config.limits.max_file_bytes);
    for (const o of out) {
      this.record({
        kind: "undo",
        session: sessionId,
        call_id: o.change.call_id,
        tool: o.change.tool,
        decision: o.result,
        rule: force ? "undo:force" : "undo",
        duration_ms: 0,
        result_bytes: Buffer.byteLength(o.message),
        is_error: o.result === "refused",
        proposal: o.change.proposal_id,
      });
    }
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
    };
  }

  async close(): Promise<void> {
    await this.mcp.close();
    await this.audit.close();
  }
}
