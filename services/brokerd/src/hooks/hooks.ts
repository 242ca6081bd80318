import type { Logger } from "@boxmaker/common";
import type { AuditRecord } from "../audit.js";
import { Refused } from "../errors.js";
import type { Sandbox } from "../sandbox.js";
import type { SecretCheck } from "../tools/fs-walk.js";
import { hookRecord } from "./audit-line.js";
import { hookInput } from "./input.js";
import { type HookTrust, type ProjectHooks, readProjectHooks } from "./project-file.js";
import { type HookRun, runHook } from "./runner.js";
import { type HookSource, hooksFor, type SelectedHook } from "./select.js";
import type { HookEvent, HookInput, HooksConfig } from "./types.js";

export interface HooksDeps {
  hooks: HooksConfig;
  roots: readonly string[];
  /** The path guard's secret identities: a hook file that is a secret under another name is not read. */
  secrets: SecretCheck;
  sandbox: Sandbox;
  trust: HookTrust;
  log: Logger;
  record(r: AuditRecord): void;
}

/** A tool call as the tool hooks see it. */
export interface ToolCallContext {
  sessionId: string;
  callId: string;
  tool: string;
  args: unknown;
}

interface FiredHook {
  name: string;
  origin: string;
  run: HookRun;
}

/** The longest reason or note a hook gives the model; the rest is in the audit count only. */
const MAX_NOTE_CHARS = 4000;

/**
 * The operator's hooks and each workspace's trusted `.boxmaker/hooks.json`,
 * run at their events. The project files are read at every event, so a file
 * changed since a person trusted it is skipped from that moment on.
 */
export class Hooks {
  constructor(private readonly d: HooksDeps) {}

  /** Every root's project file as it is now, trusted or not (`boxmaker hooks`). */
  projectFiles(): ProjectHooks[] {
    return this.d.roots.map((r) => readProjectHooks(r, this.d.trust, this.d.secrets));
  }

  get operator(): HooksConfig {
    return this.d.hooks;
  }

  /**
   * A person approves a project file's content: only if it still hashes to
   * what they were shown, so an edit between showing and trusting is not trusted.
   */
  trust(file: string, sha256: string): ProjectHooks {
    const p = this.projectFiles().find((f) => f.file === file);
    if (!p || p.state === "absent") throw new Refused("hooks:no-file", `${file} is not a project hook file here`);
    if (p.state === "invalid") throw new Refused("hooks:invalid", `${file} is not a valid hook file: ${p.error}`);
    if (p.sha256 !== sha256)
      throw new Refused("hooks:changed", `${file} changed since it was shown (sha256 ${p.sha256.slice(0, 12)}…)`);
    this.d.trust.set(file, sha256);
    return { ...p, state: "trusted" };
  }

  private sources(): HookSource[] {
    const out: HookSource[] = [{ origin: { kind: "operator" }, hooks: this.d.hooks }];
    for (const p of this.projectFiles()) {
      if (p.state === "trusted") out.push({ origin: { kind: "project", file: p.file, root: p.root }, hooks: p.hooks });
      else if (p.state !== "absent") this.d.log.debug({ file: p.file, state: p.state }, "project hooks not run");
    }
    return out;
  }

  private cwdOf(h: SelectedHook): string {
    return h.origin.kind === "project" ? h.origin.root : (this.d.roots[0] ?? "/");
  }

  private async runOne(h: SelectedHook, input: Omit<HookInput, "cwd">, signal?: AbortSignal): Promise<HookRun> {
    const full = hookInput({ ...input, cwd: this.cwdOf(h) });
    const run = await runHook(this.d.sandbox, h.spec, full, signal);
    const denied = input.event === "pre_tool" && run.exitCode === 2;
    this.d.record(hookRecord(h, full, run, denied));
    if (run.error || run.timedOut)
      this.d.log.warn({ hook: h.name, event: input.event, error: run.error, timed_out: run.timedOut }, "hook failed");
    return run;
  }

  /** Runs every hook of an event in order; their failures are audit lines, never errors. */
  async fire(event: HookEvent, subject: string, input: Omit<HookInput, "cwd">, signal?: AbortSignal) {
    const fired: FiredHook[] = [];
    for (const h of hooksFor(this.sources(), event, subject)) {
      const origin = h.origin.kind === "operator" ? "operator" : h.origin.file;
      fired.push({ name: h.name, origin, run: await this.runOne(h, input, signal) });
    }
    return fired;
  }

  /**
   * pre_tool: a hook that exits 2 denies the call, its output the reason. It
   * can only say no: nothing it prints changes the arguments. The first deny
   * ends the round; a hook that fails otherwise lets the call go on.
   */
  async preTool(c: ToolCallContext, signal?: AbortSignal): Promise<{ hook: string; reason: string } | undefined> {
    for (const h of hooksFor(this.sources(), "pre_tool", c.tool)) {
      const run = await this.runOne(h, toolInput("pre_tool", c), signal);
      if (run.exitCode === 2) return { hook: h.name, reason: clip(run.output.trim()) || "(no reason given)" };
    }
    return undefined;
  }

  /**
   * post_tool: what each hook prints goes back to the model as a note under
   * the tool's result (a linter's findings after an edit). Empty output with
   * exit 0 adds nothing; a hook that could not start adds nothing either.
   */
  async postTool(c: ToolCallContext & { result: string; isError: boolean }, signal?: AbortSignal): Promise<string> {
    const notes: string[] = [];
    const input = { ...toolInput("post_tool", c), result_excerpt: c.result, is_error: c.isError };
    for (const h of hooksFor(this.sources(), "post_tool", c.tool)) {
      const run = await this.runOne(h, input, signal);
      if (run.error) continue;
      // Only blank lines go: a linter's finding may be the whitespace at a line's end.
      const out = run.output.trim() ? run.output.replace(/^(?:[ \t]*\n)+/, "").replace(/\n+$/, "") : "";
      if (!out && run.exitCode === 0) continue;
      const how = run.timedOut ? `timed out after ${h.spec.timeout_ms} ms` : `exited ${run.exitCode}`;
      const dropped = run.droppedBytes ? `\n[${run.droppedBytes} more bytes of hook output dropped]` : "";
      notes.push(`[post_tool hook "${h.name}" ${how}]${out ? `\n${clip(out)}` : ""}${dropped}`);
    }
    return notes.length ? `\n\n${notes.join("\n\n")}` : "";
  }
}

const clip = (s: string) => (s.length > MAX_NOTE_CHARS ? `${s.slice(0, MAX_NOTE_CHARS)}…` : s);

const toolInput = (event: "pre_tool" | "post_tool", c: ToolCallContext): Omit<HookInput, "cwd"> => ({
  event,
  session_id: c.sessionId,
  call_id: c.callId,
  tool: c.tool,
  arguments: c.args,
});
