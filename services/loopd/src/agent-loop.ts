import {
  RpcError,
  Status,
  ToolDecision,
  decisionName,
  toRpcError,
  type BrokerService,
  type ClientOf,
  type FinalMessage,
  type InferService,
  type Logger,
  type ToolCall,
} from "@boxmaker/common";
import { TurnBudget, type BudgetLimits, type Breach } from "./budgets.js";
import { replayJson } from "./replay.js";
import { buildMessagesJson, messagesBytes, unansweredToolCalls } from "./epoch-view.js";
import { recordPromptCount, tokensOf } from "./token-counts.js";
import type { SpilledBlock } from "./prepass/index.js";
import { userMessageJson, withNotes } from "./messages.js";
import type { Session } from "./session.js";
import { epochMessages, lastAssistantIndex, type SessionState } from "./session-state.js";
import { cutForPerson } from "./error-text.js";
import { IncompleteStreamError, LogWriteError, WallBudgetExceeded } from "./errors.js";

export interface ToolOutcome {
  content: string;
  isError: boolean;
  /** For a call staged for approval. */
  proposal?: { id: string; state: "applied" | "rejected" | "failed" | "pending" };
}

/** The seams the loop talks through; tests pass fakes, the daemon passes gRPC clients. */
export interface LoopDeps {
  infer: Pick<ClientOf<typeof InferService>, "complete">;
  broker: Pick<ClientOf<typeof BrokerService>, "callTool">;
  log: Logger;
  maxTokens: number;
  /** Tools loopd runs itself (spawn_agent); anything else goes to brokerd. */
  localTools?: Record<string, (args: Record<string, unknown>, s: Session, signal: AbortSignal) => Promise<ToolOutcome>>;
  /** Waits for a person's decision on a staged proposal; resolves with the tool result text. */
  awaitDecision?: (proposalId: string, signal: AbortSignal) => Promise<ToolOutcome>;
  /** Runs before each model request (parking, compaction). */
  beforeRequest?: (s: Session, signal: AbortSignal) => Promise<void>;
  /** Makes room after the server refused a prompt as too long (compaction); true when it did. */
  recoverOverflow?: (s: Session, signal: AbortSignal) => Promise<boolean>;
  /** The inbound pre-pass: large blocks of the user's text go to the blob store before the message is logged. */
  prepass?: (s: Session, text: string, signal: AbortSignal) => Promise<{ text: string; blocks: SpilledBlock[] }>;
  /** Sees each response's timings (parking verification, context tracking). */
  afterResponse?: (s: Session, final: FinalMessage) => void;
}

/** What a turn came to, for the runner and a parent session (the CLI's TurnOutcome is the exit code a person sees). */
export interface TurnResult {
  finishReason: "stop" | "length" | "budget" | "cancelled" | "failed";
  iterations: number;
  cacheN: number;
  promptN: number;
  predictedN: number;
  promptMs: number;
  predictedMs: number;
  wallMs: number;
  finalText: string;
  breach?: Breach;
  error?: RpcError;
}

/**
 * One turn: the user's message, then model → tools → model until the model
 * stops or a budget ends it. Every record is persisted before it is acted on
 * or announced; every assistant message is stored exactly as the server
 * produced it.
 */
export async function runTurn(
  s: Session,
  userText: string,
  limits: BudgetLimits,
  deps: LoopDeps,
  signal: AbortSignal,
): Promise<TurnResult> {
  const budget = new TurnBudget(limits);
  const turn = s.state.turn + 1;
  const epoch = () => s.state.epoch.epoch;
  const out: TurnResult = {
    finishReason: "stop",
    iterations: 0,
    cacheN: 0,
    promptN: 0,
    predictedN: 0,
    promptMs: 0,
    predictedMs: 0,
    wallMs: 0,
    finalText: "",
  };
  const publish = s.events.publish.bind(s.events);

  // A previous turn that could not close its records (a write failed) is closed
  // now, before anything new: no tool call may stay unanswered under the new message.
  if (s.interrupted) s.closeInterruptedTurn();
  const pre = deps.prepass ? await deps.prepass(s, userText, signal) : { text: userText, blocks: [] };
  const epochAtStart = epoch();
  const userJson = userMessageJson(withNotes(pre.text, s.state.pendingNotes));
  s.recordTurnStart(turn, userJson);
  s.turnStartedSeq = Number(publish({ case: "turnStarted", value: { turn, slot: s.state.slot } }).seq);
  for (const b of pre.blocks) {
    publish({
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

  // The wall-clock budget must also stop a request that is still streaming.
  const wall = new AbortController();
  const onTurnAbort = () => wall.abort(signal.reason);
  signal.addEventListener("abort", onTurnAbort);
  let wallTimer: NodeJS.Timeout | undefined;
  const armWall = () => {
    const remaining = budget.wallRemainingMs();
    wallTimer = remaining === undefined ? undefined : setTimeout(() => wall.abort(new WallBudgetExceeded()), remaining);
  };
  armWall();
  // Waiting for a person's decision does not count against the wall clock.
  const awaitDecision = deps.awaitDecision;
  if (awaitDecision) {
    deps = {
      ...deps,
      awaitDecision: async (id, sig) => {
        clearTimeout(wallTimer);
        budget.pauseWall();
        try {
          return await awaitDecision(id, sig);
        } finally {
          budget.resumeWall();
          armWall();
        }
      },
    };
  }

  try {
    for (;;) {
      const breach = budget.beforeRequest();
      if (breach) {
        out.breach = breach;
        out.finishReason = "budget";
        break;
      }
      await deps.beforeRequest?.(s, wall.signal);
      // Generation may only use what the token budget has left after the prompt's new tokens.
      let requestMaxTokens = budget.maxTokensForNextRequest(deps.maxTokens, estimateNewPromptTokens(s.state));
      if (requestMaxTokens < 1) {
        out.breach = { budget: "total_tokens", limit: limits.max_total_tokens, used: budget.totalTokens };
        out.finishReason = "budget";
        break;
      }
      let final: FinalMessage;
      let sentBytes = promptBytes(s.state);
      try {
        final = await streamCompletion(s, turn, budget, deps, wall.signal, requestMaxTokens);
      } catch (err) {
        // The server says the prompt does not fit (and counted it). Spill, compact once and retry.
        if (!isContextOverflow(err)) throw err;
        recordPromptCount(s.state, sentBytes, Number((err as RpcError).details.n_prompt_tokens) || 0);
        if (!(await deps.recoverOverflow?.(s, wall.signal))) throw err;
        sentBytes = promptBytes(s.state);
        requestMaxTokens = budget.maxTokensForNextRequest(deps.maxTokens, estimateNewPromptTokens(s.state));
        if (requestMaxTokens < 1) {
          out.breach = { budget: "total_tokens", limit: limits.max_total_tokens, used: budget.totalTokens };
          out.finishReason = "budget";
          break;
        }
        final = await streamCompletion(s, turn, budget, deps, wall.signal, requestMaxTokens);
      }
      const t = final.timings;
      // What the slot now holds; the next request adds to it (compaction watches this).
      s.recordAssistant(final.messageJson, (t?.cacheN ?? 0) + (t?.promptN ?? 0) + (t?.predictedN ?? 0));
      budget.recordRequest(t?.promptN ?? 0, t?.predictedN ?? 0, final.reasoningTokens);
      out.iterations = budget.iterations;
      out.cacheN += t?.cacheN ?? 0;
      out.promptN += t?.promptN ?? 0;
      out.predictedN += t?.predictedN ?? 0;
      out.promptMs += t?.promptMs ?? 0;
      out.predictedMs += t?.predictedMs ?? 0;
      recordPromptCount(s.state, sentBytes, (t?.cacheN ?? 0) + (t?.promptN ?? 0));
      deps.afterResponse?.(s, final);

      if (final.toolCalls.length === 0) {
        out.finalText = final.content;
        out.finishReason = final.finishReason === "length" ? "length" : "stop";
        break;
      }
      for (const call of final.toolCalls) {
        wall.signal.throwIfAborted();
        publish({ case: "toolCall", value: { callId: call.id, name: call.name, arguments: call.arguments } });
        const { result, decided } = await dispatchTool(
          s,
          call,
          deps,
          wall.signal,
          final.finishReason === "length" ? requestMaxTokens : 0,
        );
        s.recordToolResult(call.id, result.content, {
          decision: decisionName(decided.decision),
          rule: decided.rule,
          is_error: result.isError,
          ...(result.proposal ? { proposal_id: result.proposal.id, proposal_state: result.proposal.state } : {}),
        });
        publish({
          case: "toolResult",
          value: {
            callId: call.id,
            name: call.name,
            content: result.content,
            isError: result.isError,
            proposalId: result.proposal?.id ?? "",
            proposalState: result.proposal?.state ?? "",
          },
        });
      }
    }
  } catch (err) {
    if (wall.signal.reason instanceof WallBudgetExceeded) {
      out.finishReason = "budget";
      out.breach = { budget: "wall_ms", limit: limits.max_wall_ms, used: budget.wallMs };
    } else if (signal.aborted) {
      out.finishReason = "cancelled";
    } else {
      out.finishReason = "failed";
      const full = turnError(err);
      // The whole text goes to the log; a person (and a parent session) sees a readable start of it.
      deps.log.warn({ session: s.id, err: full.message, code: full.codeName }, "turn failed");
      out.error = new RpcError(full.code, cutForPerson(full.message), full.details);
    }
  } finally {
    clearTimeout(wallTimer);
    signal.removeEventListener("abort", onTurnAbort);
  }

  out.wallMs = budget.wallMs;
  if (out.breach) {
    const { budget: name, limit, used } = out.breach;
    publish({ case: "budgetBreach", value: { budget: name, limit: BigInt(limit), used: BigInt(Math.round(used)) } });
  }
  // Close the turn in the log: no tool call may stay unanswered.
  const closing =
    out.finishReason === "cancelled"
      ? "cancelled: the operator cancelled the turn before this tool call ran."
      : `not run: the turn ended (${out.finishReason}) before this tool call ran.`;
  s.answerOpenToolCalls(closing);
  s.recordTurnEnd(turn, out.finishReason, out);
  if (out.error) {
    publish({ case: "turnFailed", value: { code: out.error.codeName, message: out.error.message } });
  } else {
    const seen = out.cacheN + out.promptN;
    publish({
      case: "turnDone",
      value: {
        finishReason: out.finishReason,
        iterations: out.iterations,
        timings: {
          cacheN: out.cacheN,
          promptN: out.promptN,
          promptMs: out.promptMs,
          predictedN: out.predictedN,
          predictedMs: out.predictedMs,
        },
        cacheHitRatio: seen ? out.cacheN / seen : 0,
        wallMs: out.wallMs,
        finalText: out.finalText,
        spilledBlocks: pre.blocks.length,
        compactions: epoch() - epochAtStart,
      },
    });
  }
  return out;
}

/** What a failed turn tells the client; a log that cannot be written is named as such. */
export function turnError(err: unknown): RpcError {
  if (err instanceof LogWriteError) {
    return new RpcError(
      err.errno === "ENOSPC" ? Status.RESOURCE_EXHAUSTED : Status.INTERNAL,
      `loopd cannot write the session log${err.errno === "ENOSPC" ? " (the disk is full)" : ""}: ${err.message}. Nothing after the last saved record was acted on; free space and send the message again.`,
    );
  }
  return toRpcError(err);
}

/**
 * The prompt tokens the server will probably have to read for the next
 * request (an over-estimate, from bytes): the messages after the last model
 * response when the slot holds the session's conversation, else the whole
 * prompt (a new session, a new epoch).
 */
export function estimateNewPromptTokens(st: SessionState): number {
  const messages = epochMessages(st);
  if (st.contextTokens > 0) {
    return messages.slice(lastAssistantIndex(messages) + 1).reduce((a, m) => a + tokensOf(st, m.json), 0);
  }
  return (
    tokensOf(st, st.epoch.systemJson) +
    tokensOf(st, st.epoch.toolsJson) +
    messages.reduce((a, m) => a + tokensOf(st, replayJson(m)), 0)
  );
}

/** The bytes of the next request's prompt (messages and tools), set against the server's count of its tokens. */
function promptBytes(st: SessionState): number {
  return messagesBytes(st) + Buffer.byteLength(st.epoch.toolsJson);
}

function isContextOverflow(err: unknown): boolean {
  return err instanceof RpcError && err.code === Status.FAILED_PRECONDITION && "n_ctx" in err.details;
}

async function streamCompletion(
  s: Session,
  turn: number,
  budget: TurnBudget,
  deps: LoopDeps,
  signal: AbortSignal,
  maxTokens: number,
): Promise<FinalMessage> {
  const publish = s.events.publish.bind(s.events);
  const stream = deps.infer.complete(
    {
      slot: s.state.slot,
      messagesJson: buildMessagesJson(s.state),
      toolsJson: s.state.epoch.toolsJson,
      maxTokens,
      thinkingCapTokens: budget.thinkingCapForNextRequest(),
      requestId: `${s.id}/${turn}/${budget.iterations + 1}`,
    },
    { signal },
  );
  for await (const ev of stream) {
    const e = ev.event;
    switch (e.case) {
      case "progress":
        publish({ case: "progress", value: e.value });
        break;
      case "reasoning":
        publish({ case: "reasoning", value: e.value });
        break;
      case "content":
        publish({ case: "content", value: e.value });
        break;
      case "thinkingCap":
        publish({ case: "thinkingCap", value: e.value });
        publish({
          case: "budgetBreach",
          value: {
            budget: "thinking_tokens",
            limit: BigInt(budget.limits.max_thinking_tokens),
            used: BigInt(budget.thinkingTokens + e.value.reasoningTokens),
          },
        });
        break;
      case "final":
        return e.value;
      default:
        break;
    }
  }
  signal.throwIfAborted();
  throw new IncompleteStreamError();
}

/**
 * The tool result for a call whose arguments are not a JSON object. A call cut
 * off by max_tokens is named as such: the model must make it again, shorter.
 * (Replay sends such a call with `{}` as its arguments, see replay.ts.)
 */
export function badArgumentsResult(
  call: Pick<ToolCall, "name" | "arguments" | "parseError">,
  cutOffAt: number,
): string {
  if (cutOffAt) {
    return (
      `error: ${call.name} was not run: your reply reached its limit of ${cutOffAt} tokens before the call's arguments were complete ` +
      `(${call.arguments.length} characters written, the JSON is unfinished). ` +
      `Call ${call.name} again with complete, shorter arguments (for a long file, write it in smaller parts).`
    );
  }
  return `error: the arguments for ${call.name} are not valid JSON (${call.parseError}). Call ${call.name} again with a single JSON object as arguments.`;
}

interface Decided {
  decision: ToolDecision;
  rule: string;
  proposalId?: string;
}

/** Decides and runs one tool call; the decision is announced before the call runs. */
async function dispatchTool(
  s: Session,
  call: ToolCall,
  deps: LoopDeps,
  signal: AbortSignal,
  /** The request's max_tokens when the response ended at it (finish_reason length), else 0. */
  cutOffAt = 0,
): Promise<{ result: ToolOutcome; decided: Decided }> {
  const announce = (d: Decided) => {
    s.events.publish({ case: "toolDecision", value: { callId: call.id, ...d } });
    return d;
  };
  if (call.parseError) {
    return {
      decided: announce({ decision: ToolDecision.DENIED, rule: cutOffAt ? "arguments-cut-off" : "arguments-not-json" }),
      result: { isError: true, content: badArgumentsResult(call, cutOffAt) },
    };
  }
  const local = deps.localTools?.[call.name];
  if (local) {
    // loopd runs these itself, but brokerd's policy decides whether they run at all:
    // the same call goes to brokerd first, and only its go-ahead starts the tool.
    let gate;
    try {
      gate = await deps.broker.callTool(
        { sessionId: s.id, callId: call.id, name: call.name, argumentsJson: call.arguments },
        { signal },
      );
    } catch (err) {
      signal.throwIfAborted();
      return {
        decided: { decision: ToolDecision.UNSPECIFIED, rule: "broker-unavailable" },
        result: {
          isError: true,
          content: `error: the tool broker could not check ${call.name}: ${toRpcError(err).message}`,
        },
      };
    }
    if (gate.decision === ToolDecision.DENIED) {
      return {
        decided: announce({ decision: gate.decision, rule: gate.rule }),
        result: { content: gate.content, isError: true },
      };
    }
    if (gate.decision === ToolDecision.STAGED) {
      if (!gate.proposalId || !deps.awaitDecision) {
        return {
          decided: announce({ decision: gate.decision, rule: gate.rule, proposalId: gate.proposalId }),
          result: { content: gate.content, isError: false },
        };
      }
      const decidedStaged = announce({ decision: gate.decision, rule: gate.rule, proposalId: gate.proposalId });
      const verdict = await deps.awaitDecision(gate.proposalId, signal);
      if (verdict.isError) return { decided: decidedStaged, result: verdict };
      return {
        decided: decidedStaged,
        result: await local(JSON.parse(call.arguments) as Record<string, unknown>, s, signal),
      };
    }
    const decided = announce({ decision: ToolDecision.ALLOWED, rule: gate.rule || "loopd" });
    return { decided, result: await local(JSON.parse(call.arguments) as Record<string, unknown>, s, signal) };
  }
  let res;
  try {
    res = await deps.broker.callTool(
      { sessionId: s.id, callId: call.id, name: call.name, argumentsJson: call.arguments },
      { signal },
    );
  } catch (err) {
    signal.throwIfAborted();
    const e = toRpcError(err);
    return {
      decided: { decision: ToolDecision.UNSPECIFIED, rule: "broker-unavailable" },
      result: { isError: true, content: `error: the tool broker could not run ${call.name}: ${e.message}` },
    };
  }
  const decided = announce({ decision: res.decision, rule: res.rule, proposalId: res.proposalId });
  if (res.decision === ToolDecision.STAGED && res.proposalId && deps.awaitDecision) {
    return { decided, result: await deps.awaitDecision(res.proposalId, signal) };
  }
  return { decided, result: { content: res.content, isError: res.isError } };
}
