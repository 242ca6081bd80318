import {
  SlotQueue,
  failedPrecondition,
  messageOf,
  notFound,
  type BrokerService,
  type ClientOf,
  type InferService,
  type Logger,
  type SlotMap,
} from "@boxmaker/common";
import { runTurn, type LoopDeps } from "./agent-loop.js";
import { abandonedTurnEvent, turnEndEvent, type TurnResult } from "./turn-end.js";
import { mergeLimits, type BudgetLimits } from "./budgets.js";
import type { LoopdConfig } from "../config.js";
import { systemMessageJson } from "../sessions/messages.js";
import { BaselinePrompt } from "../baseline-prompt.js";
import { readInstructions, withInstructions } from "../project-instructions.js";
import { Parking } from "../slots/parking.js";
import type { SessionRoleName } from "../sessions/session-log.js";
import type { SessionStore } from "../sessions/session-store.js";
import type { Session } from "../sessions/session.js";
import { ApprovalWaits } from "./approvals.js";
import type { EventBody } from "../sessions/event-hub.js";
import { Compactor, type CompactResult } from "../compaction/compaction.js";
import type { Spill } from "../compaction/compaction-shrink.js";
import { SessionBlobs } from "../session-blobs.js";
import { HookEvents } from "../hook-events.js";
import { TurnCancelled } from "../errors.js";
import { CacheHealth } from "../slots/cache-health.js";
import type { SubagentHost } from "./subagent-spawn.js";
import { loopDepsFor } from "./loop-wiring.js";
import { oneSessionId } from "../sessions/session-lookup.js";
import type { ServerSlots } from "../slots/server-slots.js";

export interface RunnerDeps {
  store: SessionStore;
  infer: ClientOf<typeof InferService>;
  broker: ClientOf<typeof BrokerService>;
  log: Logger;
  config: LoopdConfig;
  /** The slot map held against the server's slot count. */
  serverSlots: ServerSlots;
}

/**
 * Sessions in motion: creates them with a frozen epoch, runs their turns on
 * their pinned slot (waiting in line when the slot is busy), and wires in
 * parking, approvals and subagents (what a turn's loop is given: loop-wiring.ts).
 */
export class SessionRunner {
  /** One running turn per llama-server slot (held across tool calls, so no other session evicts its cache mid-turn). */
  readonly slots = new SlotQueue();
  readonly parking: Parking;
  readonly approvals: ApprovalWaits;
  readonly compactor: Compactor;
  readonly blobs: SessionBlobs;
  /** session_start, turn_end and notifications, for brokerd's hooks. */
  readonly hookEvents: HookEvents;
  /** Σprompt_n over the tokens truly new, per session and for the server (cache-health.ts). */
  readonly cacheHealth = new CacheHealth();
  /** What a new session sends before its first message, by the server's tokenizer. */
  readonly baseline: BaselinePrompt;
  private readonly loopDeps: LoopDeps;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly d: RunnerDeps) {
    this.parking = new Parking(d.infer, d.log, d.config.parking.enabled);
    this.approvals = new ApprovalWaits(d.config.approval_wait_ms);
    this.blobs = new SessionBlobs(d.broker, d.log, d.config.prepass.excerpt_bytes);
    this.hookEvents = new HookEvents(d.broker, d.log);
    const spill: Spill = async (s, text, threshold, signal) => {
      const r = await this.blobs.spill(s, text, threshold, signal);
      return { text: r.text, blocks: r.blocks.length };
    };
    this.compactor = new Compactor(
      d.infer,
      d.log,
      d.config.compaction,
      () => this.systemPrompt(),
      d.config.max_tokens,
      spill,
    );
    this.baseline = new BaselinePrompt(
      async () => ({
        systemJson: systemMessageJson(this.systemPrompt()),
        toolsJson: (await d.broker.getTools({}, { timeoutMs: 10_000 })).toolsJson,
      }),
      (messagesJson, toolsJson, signal) => this.compactor.tokens.prompt(messagesJson, toolsJson, signal),
      d.log,
    );
    const subagents: SubagentHost = {
      create: (role, title, parentId) => this.create(role, title, parentId),
      runOnSlot: (s, text, limits, signal, lender) => this.runOnSlot(s, text, limits, signal, lender),
      parking: this.parking,
      budgets: () => d.config.budgets,
    };
    this.loopDeps = loopDepsFor({
      infer: d.infer,
      broker: d.broker,
      log: d.log,
      config: d.config,
      subagents,
      hookEvents: this.hookEvents,
      approvals: this.approvals,
      compactor: this.compactor,
      blobs: this.blobs,
      parking: this.parking,
      cacheHealth: this.cacheHealth,
      sessionOf: (id) => (id ? d.store.get(id) : undefined),
    });
  }

  /** Folds a session now (`boxmaker compact`), on its slot like a turn. */
  async compactNow(id: string): Promise<CompactResult | undefined> {
    const s = this.get(id);
    if (s.state.archived) throw failedPrecondition(`session ${id} is archived`);
    if (s.running) throw failedPrecondition(`session ${id} is running a turn; wait for it or cancel it`);
    const ac = new AbortController();
    s.running = ac;
    let release: (() => void) | undefined;
    try {
      release = await this.slots.acquire(s.state.slot, s.id, ac.signal, () => undefined);
      await this.parking.arrive(s.state.slot, s.id, ac.signal);
      const r = await this.compactor.compact(s, ac.signal, "request");
      this.blobs.pin(s);
      return r;
    } finally {
      release?.();
      s.running = undefined;
    }
  }

  /** The instructions file a session started now would read, for status; "" when there is none. */
  instructionsFile(): string {
    return readInstructions(this.d.config.project_instructions)?.path ?? "";
  }

  /** The configured prompt plus the project's instructions file, read now (a new session or epoch). */
  systemPrompt(): string {
    return withInstructions(
      this.d.config.system_prompt,
      readInstructions(this.d.config.project_instructions, this.instructionsRefused),
    );
  }

  private readonly instructionsRefused = (path: string, reason: string) =>
    this.d.log.warn({ path, reason }, "project instructions not read");

  /** The slot each role runs on now: the config's, else what the server's slot count gives. */
  get slotMap(): SlotMap {
    return this.d.serverSlots.check.map;
  }

  /** Why the configured map cannot run on this server, in one line; "" when it can. */
  slotMapProblem(): string {
    return this.d.serverSlots.check.refusal();
  }

  /** The epoch's tools array is fetched once, here, and frozen in the log. */
  async create(role: SessionRoleName, title: string, parentId = ""): Promise<Session> {
    // Idempotent: wait out a brokerd restart rather than refuse the session.
    const tools = await this.d.broker.getTools({}, { waitForReady: true, timeoutMs: 10_000 });
    // A session keeps its slot for good: pin it by the server's count, not a guess at it.
    await this.d.serverSlots.known();
    const s = this.d.store.create({
      role,
      title,
      parentId,
      slot: this.slotMap[role],
      systemJson: systemMessageJson(this.systemPrompt()),
      toolsJson: tools.toolsJson,
    });
    this.blobs.pinsNothing(s.id);
    this.hookEvents.sessionStart(s.id);
    return s;
  }

  /** The session `id` names, or a unique prefix of one (what a person types); not found or ambiguous says so. */
  get(id: string): Session {
    const full = oneSessionId(id, this.d.store.idsFor(id));
    const s = full === undefined ? undefined : this.d.store.get(full);
    if (!s) throw notFound(`no session ${id}; \`boxmaker ls\` lists sessions`);
    return s;
  }

  /**
   * Starts a turn and returns at once; the turn's events go to the session's
   * hub. One turn per session at a time.
   */
  start(id: string, text: string, budgets?: Partial<BudgetLimits>): Promise<TurnResult> {
    const s = this.get(id);
    if (s.state.archived) throw failedPrecondition(`session ${id} is archived`);
    if (s.running) throw failedPrecondition(`session ${id} is already running a turn; wait for it or cancel it`);
    if (!text.trim()) throw failedPrecondition("the message is empty");
    const ac = new AbortController();
    s.running = ac;
    const turn = this.runOnSlot(s, text, mergeLimits(this.d.config.budgets, budgets), ac.signal).finally(() => {
      s.running = undefined;
      this.inFlight.delete(turn);
    });
    this.inFlight.add(turn);
    return turn;
  }

  /** Cancels every running turn and waits until each has closed its records. */
  /** Cancels every running and waiting turn, each told why (a person's client shows it), and waits for them to end. */
  async drain(reason: string): Promise<void> {
    for (const s of this.d.store.list()) s.running?.abort(new TurnCancelled(reason));
    await Promise.allSettled([...this.inFlight]);
  }

  cancel(id: string): boolean {
    const s = this.get(id);
    if (!s.running) return false;
    s.running.abort(new TurnCancelled("cancelled by the operator", { byOperator: true }));
    return true;
  }

  /**
   * A turn on the session's slot, waiting in line for it. The one place a
   * turn's end is announced: turn_done or turn_failed, however it ended.
   */
  private async runOnSlot(
    s: Session,
    text: string,
    limits: BudgetLimits,
    signal: AbortSignal,
    lender?: Session,
  ): Promise<TurnResult> {
    const slot = s.state.slot;
    let release: (() => void) | undefined;
    let result: TurnResult | undefined;
    let end: EventBody;
    let failure: { err: unknown } | undefined;
    try {
      // A slot the server lacks fails the turn now, in one line, not as the server's error after a wait in line.
      const refusal = this.d.serverSlots.check.turnRefusal(s.state.role, slot);
      if (refusal) throw failedPrecondition(refusal);
      const borrowed = lender !== undefined && this.slots.holder(slot) === lender.id;
      release = borrowed
        ? undefined
        : await this.slots.acquire(slot, s.id, signal, (w) =>
            s.events.publish({
              case: "waiting",
              value: { slot: w.slot, position: w.position, heldBySession: w.heldBy },
            }),
          );
      await this.parking.arrive(slot, s.id, signal);
      result = await runTurn(s, text, limits, this.loopDeps, signal);
      end = turnEndEvent(result);
      // turnEndEvent builds a plain init object: the session's cache health rides on it.
      if (end?.case === "turnDone")
        (end.value as { cacheHealth?: unknown }).cacheHealth = this.cacheHealth.ofSession(s.id);
      if (end?.case === "turnDone" && result.finishReason === "cancelled")
        (end.value as { cancelReason?: string }).cancelReason = unaskedCancel(signal);
    } catch (err) {
      // Only failures outside the loop land here (cancelled while queued, a log that cannot be written).
      const cancelled = signal.aborted;
      this.d.log.warn(
        { session: s.id, err: messageOf(err) },
        cancelled ? "turn cancelled before it ran" : "turn failed",
      );
      end = abandonedTurnEvent(err, cancelled, unaskedCancel(signal));
      failure = { err };
    }
    // The one place a turn's end is announced, however the turn ended; the slot is still held.
    try {
      s.events.publish(end);
    } finally {
      release?.();
    }
    this.hookEvents.turnEnd(
      s.id,
      result?.error ? "failed" : (result?.finishReason ?? (signal.aborted ? "cancelled" : "failed")),
    );
    if (result?.breach)
      this.hookEvents.notify(
        s.id,
        "budget_ended",
        `session ${s.id}: its ${result.breach.budget} budget ended the turn (${Math.round(result.breach.used)} of ${result.breach.limit})`,
      );
    if (failure) throw failure.err;
    this.blobs.pin(s);
    return result!;
  }
}

/** The reason a turn was cancelled when nobody asked for it; "" for a person's cancel. */
function unaskedCancel(signal: AbortSignal): string {
  const why = signal.reason;
  return why instanceof TurnCancelled && !why.byOperator ? why.message : "";
}
