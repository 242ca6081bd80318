import { setImmediate } from "node:timers/promises";
import {
  ErrorReason,
  RpcError,
  Status,
  type ClientOf,
  type CompletionEvent,
  type FinalMessage,
  type InferService,
  type Logger,
} from "@boxmaker/common";
import type { TurnBudget } from "../loop/budgets.js";
import { IncompleteStreamError, InterruptedAnswer } from "../errors.js";
import { pauseBeforeRetry, retryReason, type PendingRetry, type Shown, type TurnRetries } from "./request-retry.js";
import type { Session } from "../sessions/session.js";
import { forgetSent, noteSent, requestMessages, type RequestMessages } from "./sent-prefix.js";
import { ToolCallProgress } from "../loop/tool-call-progress.js";

/** What one model request of a turn needs besides its messages. */
export interface CompletionCall {
  s: Session;
  infer: Pick<ClientOf<typeof InferService>, "complete">;
  budget: TurnBudget;
  requestId: string;
  maxTokens: number;
  signal: AbortSignal;
  /** The turn's retries (request-retry.ts); absent: a failure ends the request. */
  retries?: TurnRetries;
  log?: Logger;
}

/** One attempt of a request: whether it is a retry, and what it streamed to the person. */
interface Attempt {
  retry: PendingRetry | undefined;
  shown: Shown;
}

/**
 * One model request of a turn: the epoch's messages as stored, streamed back
 * as events (progress, reasoning, content, the thinking cap firing) until the
 * final message, which is returned for the loop to log and act on.
 */
export async function requestCompletion(call: CompletionCall): Promise<FinalMessage> {
  let retry: PendingRetry | undefined;
  for (;;) {
    const attempt: Attempt = { retry, shown: { contentChars: 0, reasoningTokens: 0 } };
    try {
      return await withPrefix(call, attempt);
    } catch (err) {
      // The server (or inferproxy) went away: nothing of this attempt is in the log, so it can be sent again.
      const r = call.retries;
      // Waited for the whole window and still away: one line, not another wait.
      if (r?.stayedAway(err, attempt.retry) && !call.signal.aborted) throw r.gaveUpWaiting(err, attempt.retry);
      if (!r?.mayRetry(err, call.signal)) throw r ? r.exhausted(err) : err;
      retry = r.next(call.budget.wallRemainingMs());
      const why = retryReason(err);
      call.log?.warn(
        { session: call.s.id, request_id: call.requestId, attempt: retry.attempt, code: why.code, err: why.reason },
        "model request cut off; sending it again once the server is back",
      );
      call.s.events.publish({
        case: "retry",
        value: {
          phase: "waiting",
          attempt: retry.attempt,
          maxAttempts: r.max,
          code: why.code,
          reason: why.reason,
          discardedContentChars: attempt.shown.contentChars,
          discardedReasoningTokens: attempt.shown.reasoningTokens,
          waitMs: retry.waitMs,
        },
      });
      await pauseBeforeRetry(retry.attempt, call.signal);
    }
  }
}

async function withPrefix(call: CompletionCall, attempt: Attempt): Promise<FinalMessage> {
  const prefixed = requestMessages(call.s.state);
  try {
    return await streamCompletion(call, prefixed, attempt);
  } catch (err) {
    // inferproxy restarted or forgot the prefix: nothing was sent upstream or published; send it all.
    if (!prefixed.afterMessagesToken || !isPrefixUnknown(err)) throw err;
    forgetSent(call.s.state);
    return streamCompletion(call, requestMessages(call.s.state, true), attempt);
  }
}

/**
 * The first answer to a request: the turn has reached the server, and a
 * retry is announced as made, with what the server had to read again.
 */
function onFirstAnswer(call: CompletionCall, attempt: Attempt, e: CompletionEvent["event"]): void {
  if (call.retries) call.retries.reached = true;
  const retry = attempt.retry;
  if (!retry) return;
  attempt.retry = undefined;
  let cached = 0;
  let reread = 0;
  if (e.case === "progress") {
    cached = e.value.cache;
    reread = Math.max(0, e.value.total - e.value.cache);
  } else if ((e.case === "final" || e.case === "partial") && e.value.timings) {
    cached = e.value.timings.cacheN;
    reread = e.value.timings.promptN;
  }
  call.s.events.publish({
    case: "retry",
    value: {
      phase: "resent",
      attempt: retry.attempt,
      maxAttempts: call.retries?.max ?? 0,
      waitedMs: performance.now() - retry.brokeAt,
      promptCached: cached,
      promptReread: reread,
    },
  });
}

async function streamCompletion(
  call: CompletionCall,
  messages: RequestMessages,
  attempt: Attempt,
): Promise<FinalMessage> {
  const { s, infer, budget, requestId, maxTokens, signal } = call;
  const publish = s.events.publish.bind(s.events);
  const stream = infer.complete(
    {
      slot: s.state.slot,
      messagesJson: messages.messagesJson,
      afterMessagesToken: messages.afterMessagesToken,
      toolsJson: s.state.epoch.toolsJson,
      maxTokens,
      thinkingCapTokens: budget.thinkingCapForNextRequest(),
      requestId,
      // A re-sent request waits in inferproxy for the server to be back, within the wall budget.
      waitForServerMs: attempt.retry?.waitMs ?? 0,
    },
    { signal },
  );
  let final: FinalMessage | undefined;
  /** What inferproxy had streamed when the request was cancelled (it answers a cancel with it). */
  let partial: FinalMessage | undefined;
  let shownFirst = false;
  const toolProgress = new ToolCallProgress(publish);
  let answered = false;
  try {
    for await (const ev of stream) {
      const e = ev.event;
      if (!answered) {
        answered = true;
        onFirstAnswer(call, attempt, e);
      }
      switch (e.case) {
        case "progress":
          publish({ case: "progress", value: e.value });
          break;
        case "reasoning":
          attempt.shown.reasoningTokens++;
          publish({ case: "reasoning", value: e.value });
          break;
        case "content":
          attempt.shown.contentChars += e.value.text.length;
          publish({ case: "content", value: e.value });
          break;
        case "toolCall":
          toolProgress.onDelta(e.value);
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
        case "partial":
          // Only a cancelled request's is kept; a failure's is what a retry sends again.
          if (signal.aborted) partial = e.value;
          break;
        case "final":
          noteSent(s.state, messages.count, e.value.messagesToken);
          // Read on to the stream's end (inferproxy ends it right after the final event):
          // leaving early would cancel a finished call, which costs both daemons an error path.
          final = e.value;
          break;
        default:
          break;
      }
      if (!shownFirst && (e.case === "content" || e.case === "reasoning")) {
        shownFirst = true;
        // The first token is what a person waits for. The client's stream wrote it as it was
        // published, but http2 sends only when the event loop turns, and the rest of a burst
        // from inferproxy is already here to be published first: give the loop that turn now.
        await setImmediate();
      }
    }
  } catch (err) {
    // The final message is the whole answer: a cancel or a broken stream after it loses nothing.
    if (final) return final;
    if (partial && signal.aborted) throw new InterruptedAnswer(partial, { cause: err });
    throw err;
  }
  if (!final) {
    signal.throwIfAborted();
    throw new IncompleteStreamError();
  }
  // The loop logs the message next, and an fsync holds the event loop: let the events just
  // published reach their clients first, or the last tokens would wait for the disk.
  await setImmediate();
  return final;
}

/** inferproxy no longer holds the prefix a request named (it restarted, or forgot it). */
function isPrefixUnknown(err: unknown): boolean {
  return (
    err instanceof RpcError &&
    err.status === Status.FAILED_PRECONDITION &&
    err.details.reason === ErrorReason.PREFIX_UNKNOWN
  );
}

/** The server refused the prompt as longer than the slot's context (and said how long it was). */
export function isContextOverflow(err: unknown): err is RpcError {
  return (
    err instanceof RpcError &&
    err.status === Status.FAILED_PRECONDITION &&
    err.details.reason === ErrorReason.CONTEXT_OVERFLOW
  );
}
