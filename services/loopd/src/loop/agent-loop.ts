import { RpcError, type ClientOf, type FinalMessage, type InferService, type Logger } from "@boxmaker/common";
import { TurnBudget, type BudgetLimits, type Breach } from "./budgets.js";
import { isContextOverflow, requestCompletion } from "../model-requests/completion.js";
import { cutForPerson } from "../error-text.js";
import { InterruptedAnswer } from "../errors.js";
import { interruptedMessageJson } from "./interrupted-answer.js";
import type { SpilledBlock } from "../prepass/index.js";
import { userMessageJson, withNotes } from "../sessions/messages.js";
import type { Session } from "../sessions/session.js";
import { TurnRetries } from "../model-requests/request-retry.js";
import { estimateNewPromptTokens, promptBytes, recordPromptCount } from "../sessions/token-counts.js";
import { runToolCall, type ToolDeps } from "./tool-dispatch.js";
import { TurnTally, contextAfter, promptTokensOf } from "./turn-accounting.js";
import { turnError, type TurnResult } from "./turn-end.js";
import { WallClock } from "./wall-clock.js";

/** The seams the loop talks through; tests pass fakes, the daemon passes gRPC clients. */
export interface LoopDeps extends ToolDeps {
  infer: Pick<ClientOf<typeof InferService>, "complete">;
  log: Logger;
  maxTokens: number;
  /** How long a cut-off request waits for the server to be back (config server_wait_ms); default 2 min. */
  serverWaitMs?: number;
  /** Runs before each model request (parking, compaction). */
  beforeRequest?: (s: Session, signal: AbortSignal) => Promise<void>;
  /** Makes room after the server refused a prompt as too long (compaction); true when it did. */
  recoverOverflow?: (s: Session, signal: AbortSignal) => Promise<boolean>;
  /** The inbound pre-pass: large blocks of the user's text go to the blob store before the message is logged. */
  prepass?: (s: Session, text: string, signal: AbortSignal) => Promise<{ text: string; blocks: SpilledBlock[] }>;
  /** Sees each response's timings (parking verification, context tracking). */
  afterResponse?: (s: Session, final: FinalMessage) => void;
}

/** Compactions after a refused prompt, per request, before the turn fails with the refusal. */
const MAX_OVERFLOW_RECOVERIES = 2;

/** Why the loop stopped on its own (an error or a cancellation ends it by throwing). */
type Stop = { finishReason: "stop" | "length"; finalText: string } | { finishReason: "budget"; breach: Breach };

/**
 * One turn: the user's message, then model → tools → model until the model
 * stops or a budget ends it. Every record is persisted before it is acted on
 * or announced; every assistant message is stored exactly as the server
 * produced it. The turn's end is announced by the caller (see turn-end.ts).
 */
export async function runTurn(
  s: Session,
  userText: string,
  limits: BudgetLimits,
  deps: LoopDeps,
  signal: AbortSignal,
): Promise<TurnResult> {
  const budget = new TurnBudget(limits);
  const tally = new TurnTally();
  const turn = s.state.turn + 1;

  // A previous turn that could not close its records (a write failed) is closed
  // now, before anything new: no tool call may stay unanswered under the new message.
  if (s.interrupted) s.closeInterruptedTurn();
  const pre = deps.prepass ? await deps.prepass(s, userText, signal) : { text: userText, blocks: [] };
  const epochAtStart = s.state.epoch.epoch;
  s.recordTurnStart(turn, userMessageJson(withNotes(pre.text, s.state.pendingNotes)));
  s.turnStartedSeq = Number(s.events.publish({ case: "turnStarted", value: { turn, slot: s.state.slot } }).seq);
  for (const b of pre.blocks) {
    s.events.publish({
      case: "inputSpilled",
      value: {
        blobSha256: b.hash,
        kind: b.kind,
        bytes: BigInt(b.bytes),
        lines: b.lines,
        shownBytes: BigInt(b.shownBytes),
        form: b.form,
      },
    });
  }

  const wall = new WallClock(budget, signal);
  const { awaitDecision, relayQuestions } = deps;
  // Time a person spends answering (an approval, a server's question) is not the turn's.
  const loopDeps: LoopDeps = {
    ...deps,
    ...(awaitDecision
      ? { awaitDecision: (id, sig, sessionId) => wall.paused(() => awaitDecision(id, sig, sessionId)) }
      : {}),
    ...(relayQuestions
      ? {
          relayQuestions: (rs, callId, done) =>
            relayQuestions(rs, callId, done, (ended) => void wall.paused(() => ended)),
        }
      : {}),
  };
  let stop: Stop | undefined;
  let error: RpcError | undefined;
  try {
    stop = await loop(s, turn, budget, tally, loopDeps, wall.signal);
  } catch (err) {
    if (wall.ranOut) {
      stop = { finishReason: "budget", breach: { budget: "wall_ms", limit: limits.max_wall_ms, used: budget.wallMs } };
    } else if (!signal.aborted) {
      const full = turnError(err);
      // The whole text goes to the log; a person (and a parent session) sees a readable start of it.
      deps.log.warn({ session: s.id, err: full.message, code: full.statusName }, "turn failed");
      error = new RpcError(full.status, cutForPerson(full.message), full.details);
    }
  } finally {
    wall.dispose();
  }

  const out: TurnResult = {
    finishReason: stop?.finishReason ?? (error ? "failed" : "cancelled"),
    iterations: budget.iterations,
    cacheN: tally.cacheN,
    promptN: tally.promptN,
    predictedN: tally.predictedN,
    promptMs: tally.promptMs,
    predictedMs: tally.predictedMs,
    wallMs: budget.wallMs,
    finalText: stop && stop.finishReason !== "budget" ? stop.finalText : "",
    spilledBlocks: pre.blocks.length,
    compactions: 0,
    ...(stop?.finishReason === "budget" ? { breach: stop.breach } : {}),
    ...(error ? { error } : {}),
  };
  if (out.breach) {
    const { budget: name, limit, used } = out.breach;
    s.events.publish({
      case: "budgetBreach",
      value: { budget: name, limit: BigInt(limit), used: BigInt(Math.round(used)) },
    });
  }
  // Close the turn in the log: no tool call may stay unanswered.
  s.answerOpenToolCalls(
    out.finishReason === "cancelled"
      ? "cancelled: the operator cancelled the turn before this tool call ran."
      : `not run: the turn ended (${out.finishReason}) before this tool call ran.`,
  );
  s.recordTurnEnd(turn, out.finishReason, tally);
  out.compactions = s.state.epoch.epoch - epochAtStart;
  return out;
}

/** Requests and tool calls until the model stops or a budget does; throws on failure and cancellation. */
async function loop(
  s: Session,
  turn: number,
  budget: TurnBudget,
  tally: TurnTally,
  deps: LoopDeps,
  signal: AbortSignal,
): Promise<Stop> {
  const tokensLeft = (): Stop => ({
    finishReason: "budget",
    breach: { budget: "total_tokens", limit: budget.limits.max_total_tokens, used: budget.totalTokens },
  });
  // Nobody watches a scheduled turn: it waits for a server that is restarting even before its first answer.
  const retries = new TurnRetries(s.state.role === "scheduled", deps.serverWaitMs);
  for (;;) {
    const breach = budget.beforeRequest();
    if (breach) return { finishReason: "budget", breach };
    await deps.beforeRequest?.(s, signal);
    // Generation may only use what the token budget has left after the prompt's new tokens.
    let maxTokens = budget.maxTokensForNextRequest(deps.maxTokens, estimateNewPromptTokens(s.state));
    if (maxTokens < 1) return tokensLeft();
    const complete = () =>
      requestCompletion({
        s,
        infer: deps.infer,
        budget,
        requestId: `${s.id}/${turn}/${budget.iterations + 1}`,
        maxTokens,
        signal,
        retries,
        log: deps.log,
      });
    // An answer cut off mid-way is kept, marked, and counted like any response: the person saw it,
    // the server read the prompt and holds what it generated.
    const request = async () => {
      try {
        return await complete();
      } catch (err) {
        if (err instanceof InterruptedAnswer) keepInterrupted(s, err.partial, budget, tally);
        throw err;
      }
    };
    let final: FinalMessage | undefined;
    let sentBytes = promptBytes(s.state);
    // The server says the prompt does not fit (and counted it): spill, compact and retry. Twice: a
    // first compaction can leave the running turn's own results too big, which a second one cuts.
    for (let recoveries = 0; !final; recoveries++) {
      try {
        final = await request();
      } catch (err) {
        if (!isContextOverflow(err) || recoveries >= MAX_OVERFLOW_RECOVERIES) throw err;
        recordPromptCount(s.state, sentBytes, err.details.nPromptTokens);
        if (!(await deps.recoverOverflow?.(s, signal))) throw err;
        sentBytes = promptBytes(s.state);
        maxTokens = budget.maxTokensForNextRequest(deps.maxTokens, estimateNewPromptTokens(s.state));
        if (maxTokens < 1) return tokensLeft();
      }
    }
    const t = final.timings;
    // What the slot now holds; the next request adds to it (compaction watches this).
    s.recordAssistant(final.messageJson, contextAfter(t), final.toolCalls.length === 0);
    budget.recordRequest(t?.promptN ?? 0, t?.predictedN ?? 0, final.reasoningTokens);
    tally.add(t);
    recordPromptCount(s.state, sentBytes, promptTokensOf(t));
    deps.afterResponse?.(s, final);

    if (final.toolCalls.length === 0) {
      return { finishReason: final.finishReason === "length" ? "length" : "stop", finalText: final.content };
    }
    for (const call of final.toolCalls) {
      signal.throwIfAborted();
      await runToolCall(s, call, deps, signal, final.finishReason === "length" ? maxTokens : 0);
    }
    // A call cancelled while it waited for approval has its result; the turn ends here.
    signal.throwIfAborted();
  }
}

/** Logs an interrupted answer (if anything was generated) and counts its request in the turn. */
function keepInterrupted(s: Session, partial: FinalMessage, budget: TurnBudget, tally: TurnTally): void {
  const t = partial.timings;
  const json = interruptedMessageJson(partial);
  if (json !== undefined) s.recordAssistant(json, contextAfter(t), true, true);
  budget.recordRequest(t?.promptN ?? 0, t?.predictedN ?? 0, partial.reasoningTokens);
  tally.add(t);
}
