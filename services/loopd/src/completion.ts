import { RpcError, Status, type ClientOf, type FinalMessage, type InferService } from "@boxmaker/common";
import type { TurnBudget } from "./budgets.js";
import { buildMessagesJson } from "./epoch-view.js";
import { IncompleteStreamError } from "./errors.js";
import type { Session } from "./session.js";

/**
 * One model request of a turn: the epoch's messages as stored, streamed back
 * as events (progress, reasoning, content, the thinking cap firing) until the
 * final message, which is returned for the loop to log and act on.
 */
export async function requestCompletion(
  s: Session,
  infer: Pick<ClientOf<typeof InferService>, "complete">,
  budget: TurnBudget,
  requestId: string,
  maxTokens: number,
  signal: AbortSignal,
): Promise<FinalMessage> {
  const publish = s.events.publish.bind(s.events);
  const stream = infer.complete(
    {
      slot: s.state.slot,
      messagesJson: buildMessagesJson(s.state),
      toolsJson: s.state.epoch.toolsJson,
      maxTokens,
      thinkingCapTokens: budget.thinkingCapForNextRequest(),
      requestId,
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

/** The server refused the prompt as longer than the slot's context (and said how long it was). */
export function isContextOverflow(err: unknown): err is RpcError {
  return err instanceof RpcError && err.code === Status.FAILED_PRECONDITION && "n_ctx" in err.details;
}
