import type { BrokerConfig, Risk } from "./config-types.js";
import { ToolTableError } from "./errors.js";
import type { BlobStore } from "./blobs.js";
import type { PathGuard, ResolvedPath } from "./policy/paths.js";
import type { Sandbox } from "./sandbox.js";

type JsonSchema = Record<string, unknown>;

/** What goes back to the model: always text. */
export interface ToolText {
  text: string;
  isError: boolean;
  /** Tools the text tells the model to call (a stored blob's readers): the session may call them from now on. */
  discloses?: readonly string[];
  /** A proposal the run staged on its way (a host for the network proxy): the call ran, a person decides after. */
  proposalId?: string;
}

export interface ToolContext {
  readonly config: BrokerConfig;
  readonly guard: PathGuard;
  readonly blobs: BlobStore;
  readonly sandbox: Sandbox;
  readonly signal: AbortSignal;
  /** The call being planned (absent where no session asked: a hook). */
  readonly call?: { session: string; callId: string };
  /**
   * Whether a path rule denies `rel`, or reserves it for a person, for this
   * tool: tools that open files the call did not name (search_files) skip those.
   */
  readonly pathRuled?: (rel: string, abs: string) => boolean;
}

/**
 * A call that passed argument validation and path resolution but has not run.
 * Policy reads `paths`/`command`/`hosts`; staging shows `preview` and keeps
 * `checks`, the facts that must still hold when a person approves (the
 * canonical path, the file's hash): re-planning at approval must reproduce them.
 */
export interface Plan {
  paths: ResolvedPath[];
  command?: string;
  hosts?: string[];
  preview?: string;
  checks?: Record<string, string>;
  /** A file write: its content before (null: absent) and after, kept as a checkpoint once applied (undo). */
  change?: { path: ResolvedPath; before: string | null; after: string };
  /** Narrows where a command may write, to what the deciding rule's `paths` name (run_command). */
  scopeWrites?(dirs: string[]): void;
  execute(): Promise<ToolText>;
}

/** What every entry of the table has, whoever runs the tool. */
interface ToolBase {
  name: string;
  description: string;
  /** The arguments' JSON Schema: what the model reads and ajv checks (validate.ts). */
  parameters: JsonSchema;
  risk: Risk;
  /** In the epoch's tools array; the rest are reached through find_tool/call_tool. */
  core: boolean;
  /** Who provides it: `builtin`, `mcp:<server>`, `config`. */
  origin: string;
  /** Results it bounds itself (read_blob) must not be turned into another blob. */
  selfCapped?: boolean;
}

/**
 * A tool brokerd plans (path checks, policy) and runs: a built-in one, from
 * defineTool with its arguments typed from its schema, or an MCP server's,
 * whose arguments are only known to be an object. spawn_agent and update_plan
 * are built in: their plan is the policy's go-ahead loopd waits for.
 */
export interface PlannedTool extends ToolBase {
  kind: "builtin" | "mcp";
  /** Called with arguments the tool's schema already accepted. */
  plan: (args: unknown, ctx: ToolContext) => Promise<Plan> | Plan;
}

/** find_tool and call_tool: answered by the broker itself; the entry gives the array their schemas. */
export interface MetaTool extends ToolBase {
  kind: "meta";
}

/** A core tool another daemon runs, declared in config: brokerd lists it and never plans it. */
export interface ExternalTool extends ToolBase {
  kind: "external";
}

/** Only a planned tool has a plan: code that would run one narrows on `kind` first. */
export type ToolDef = PlannedTool | MetaTool | ExternalTool;

/** Why a call reached a tool brokerd does not plan (a crafted call_tool, a proposal file naming one). */
export function notPlannedHere(tool: MetaTool | ExternalTool): string {
  return tool.kind === "meta"
    ? "internal: meta tools are dispatched by the broker"
    : `${tool.name} is run by the loop, not by the tool broker`;
}

/** THE table: every tool brokerd knows, core and extended, keyed by name. */
export class ToolTable {
  private readonly byName = new Map<string, ToolDef>();
  private coreOrder: string[] = [];
  /** Bumped on every change so the search index knows when to rebuild. */
  version = 0;

  add(def: ToolDef): void {
    if (this.byName.has(def.name)) throw new ToolTableError(`tool ${def.name} is registered twice`);
    this.byName.set(def.name, def);
    if (def.core) this.coreOrder.push(def.name);
    this.version++;
  }

  /** Replaces everything one origin provides (an MCP server's list after a reconnect). */
  replaceOrigin(origin: string, defs: readonly ToolDef[]): void {
    for (const [name, d] of this.byName) if (d.origin === origin && !d.core) this.byName.delete(name);
    for (const d of defs) {
      if (d.core) throw new ToolTableError(`${origin} cannot add core tool ${d.name}: the tools array is fixed`);
      if (!this.byName.has(d.name)) this.byName.set(d.name, d);
    }
    this.version++;
  }

  get(name: string): ToolDef | undefined {
    return this.byName.get(name);
  }

  core(): ToolDef[] {
    return this.coreOrder.map((n) => this.byName.get(n)!);
  }

  extended(): ToolDef[] {
    return [...this.byName.values()].filter((d) => !d.core);
  }

  get size(): number {
    return this.byName.size;
  }
}
