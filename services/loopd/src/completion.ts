import { setImmediate } from "node:timers/promises";
import { RpcError, Status, type ClientOf, type FinalMessage, type InferService } from "@boxmaker/common";
import type { TurnBudget } from "./budgets.js";
import { IncompleteStreamError } from "./errors.js";
import type { Session } from "./session.js";
import { forgetSent, noteSent, requestMessages, type RequestMessages } from "./sent-prefix.js";

/** What one model request of a turn needs besides its messages. */
export interface CompletionCall {
  s: Session;
  infer: Pick<ClientOf<typeof InferService>, "complete">;
  budget: TurnBudget;
  requestId: string;
  maxTokens: number;
  signal: AbortSignal;
}

/**
 * One model request of a turn: the epoch's messages as stored, streamed back
 * as events (progress, reasoning, content, the thinking cap firing) until the
 * final message, which is returned for the loop to log and act on.
 */
export async function requestCompletion(call: CompletionCall): Promise<FinalMessage> {
  const prefixed = requestMessages(call.s.state);
  try {
    return await streamCompletion(call, prefixed);
  } catch (err) {
    // inferproxy restarted or forgot the prefix: nothing was sent upstream or published; send it all.
    if (!prefixed.afterMessagesToken || !isPrefixUnknown(err)) throw err;
    forgetSent(call.s.state);
    return streamCompletion(call, requestMessages(call.s.state, true));
  }
}

async function streamCompletion(
  { s, infer, budget, requestId, maxTokens, signal }: CompletionCall,
  messages: RequestMessages,
): Promise<FinalMessage> {
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
    },
    { signal },
  );
  let final: FinalMessage | undefined;
  let shownFirst = false;
  try {
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
  return err instanceof RpcError && err.code === Status.FAILED_PRECONDITION && err.details.reason === "prefix_unknown";
}

/** The server refused the prompt as longer than the slot's context (and said how long it was). */
export function isContextOverflow(err: unknown): err is RpcError {
  return err instanceof RpcError && err.code === Status.FAILED_PRECONDITION && "n_ctx" in err.details;
}
