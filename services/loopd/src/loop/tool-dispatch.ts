import {
  ToolDecision,
  decisionName,
  toRpcError,
  type BrokerService,
  type ClientOf,
  type ToolCall,
} from "@boxmaker/common";
import type { Session } from "../sessions/session.js";
import type { QuestionRelay } from "./question-relay.js";

/** What a tool call came to, as the model will read it. */
export interface ToolOutcome {
  content: string;
  isError: boolean;
  /** For a call staged for approval. */
  proposal?: { id: string; state: "applied" | "rejected" | "failed" | "pending" | "withdrawn" };
}

/**
 * A tool loopd runs itself (spawn_agent, update_plan), once brokerd's policy
 * lets it. It gets the call's argument text and reads it with its own schema
 * (common's loop-tools.ts), the one brokerd checked.
 */
type LocalTool = (
  argumentsJson: string,
  s: Session,
  signal: AbortSignal,
  callId: string,
) => Promise<ToolOutcome> | ToolOutcome;

/** What dispatching a call talks to; tests pass fakes, the daemon passes gRPC clients. */
export interface ToolDeps {
  broker: Pick<ClientOf<typeof BrokerService>, "callTool">;
  /** Tools loopd runs itself (spawn_agent); anything else goes to brokerd. */
  localTools?: Record<string, LocalTool>;
  /** Waits for a person's decision on a staged proposal; resolves with the tool result text. */
  awaitDecision?: (proposalId: string, signal: AbortSignal, sessionId: string) => Promise<ToolOutcome>;
  /** Passes on an MCP server's questions for the person while the call runs (question-relay.ts). */
  relayQuestions?: QuestionRelay;
}

interface Decided {
  decision: ToolDecision;
  rule: string;
  proposalId?: string;
}

/**
 * One tool call from start to logged result: announced, decided (brokerd's
 * policy, then a person's approval when it is staged), run, and its result
 * persisted before it is announced.
 */
export async function runToolCall(
  s: Session,
  call: ToolCall,
  deps: ToolDeps,
  signal: AbortSignal,
  /** The request's max_tokens when the response ended at it (finish_reason length), else 0. */
  cutOffAt: number,
): Promise<void> {
  s.events.publish({ case: "toolCall", value: { callId: call.id, name: call.name, arguments: call.arguments } });
  // From the call's start to its result, an approved one included: a server may ask while it runs.
  const relayed = new AbortController();
  if (!call.parseError && !deps.localTools?.[call.name]) deps.relayQuestions?.(s, call.id, relayed.signal);
  const { result, decided } = await dispatchTool(s, call, deps, signal, cutOffAt).finally(() => relayed.abort());
  s.recordToolResult(call.id, result.content, {
    decision: decisionName(decided.decision),
    rule: decided.rule,
    is_error: result.isError,
    ...(result.proposal ? { proposal_id: result.proposal.id, proposal_state: result.proposal.state } : {}),
  });
  s.events.publish({
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

/**
 * The tool result for a call whose arguments are not a JSON object. A call cut
 * off by max_tokens is named as such: the model must make it again, shorter.
 * (Replay sends such a call with `{}` as its arguments, see replay.ts.)
 */
function badArgumentsResult(call: Pick<ToolCall, "name" | "arguments" | "parseError">, cutOffAt: number): string {
  if (cutOffAt) {
    return (
      `error: ${call.name} was not run: your reply reached its limit of ${cutOffAt} tokens before the call's arguments were complete ` +
      `(${call.arguments.length} characters written, the JSON is unfinished). ` +
      `Call ${call.name} again with complete, shorter arguments (for a long file, write it in smaller parts).`
    );
  }
  return `error: the arguments for ${call.name} are not valid JSON (${call.parseError}). Call ${call.name} again with a single JSON object as arguments.`;
}

/** Decides and runs one tool call; the decision is announced before the call runs. */
async function dispatchTool(
  s: Session,
  call: ToolCall,
  deps: ToolDeps,
  signal: AbortSignal,
  cutOffAt: number,
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
  // loopd runs local tools itself, but brokerd's policy decides whether they run at all:
  // the same call goes to brokerd first, and only its go-ahead starts the tool.
  let res: Awaited<ReturnType<ToolDeps["broker"]["callTool"]>>;
  try {
    res = await deps.broker.callTool(
      // The mode as of this call: a switch mid-turn applies from the next call on.
      { sessionId: s.id, callId: call.id, name: call.name, argumentsJson: call.arguments, mode: s.state.mode },
      { signal },
    );
  } catch (err) {
    signal.throwIfAborted();
    return {
      decided: { decision: ToolDecision.UNSPECIFIED, rule: "broker-unavailable" },
      result: {
        isError: true,
        content: `error: the tool broker could not ${local ? "check" : "run"} ${call.name}: ${toRpcError(err).message}`,
      },
    };
  }
  if (!local) {
    const decided = announce({ decision: res.decision, rule: res.rule, proposalId: res.proposalId });
    if (res.decision === ToolDecision.STAGED && res.proposalId && deps.awaitDecision) {
      return { decided, result: await deps.awaitDecision(res.proposalId, signal, s.id) };
    }
    return { decided, result: { content: res.content, isError: res.isError } };
  }
  const runLocal = async () => local(call.arguments, s, signal, call.id);
  if (res.decision === ToolDecision.STAGED) {
    const decided = announce({ decision: res.decision, rule: res.rule, proposalId: res.proposalId });
    if (!res.proposalId || !deps.awaitDecision) return { decided, result: { content: res.content, isError: false } };
    const verdict = await deps.awaitDecision(res.proposalId, signal, s.id);
    // Only a person's approval that brokerd applied is a go-ahead: a wait that
    // timed out ("pending") or an approval that failed to apply is not.
    if (verdict.isError || verdict.proposal?.state !== "applied") return { decided, result: verdict };
    return { decided, result: await runLocal() };
  }
  // Fail closed: the tool runs on ALLOWED without error and on nothing else.
  // UNSPECIFIED, a decision this build does not know, and an allowed call that
  // brokerd answered with an error (its arguments failed validation, say) are
  // refusals, whatever the content says.
  if (res.decision !== ToolDecision.ALLOWED || res.isError) {
    const decision = res.decision === ToolDecision.ALLOWED ? res.decision : ToolDecision.DENIED;
    return {
      decided: announce({ decision, rule: res.rule || "no-go-ahead" }),
      result: {
        isError: true,
        content:
          res.decision === ToolDecision.DENIED || res.isError
            ? res.content || `error: ${call.name} was not run`
            : `error: ${call.name} was not run: the tool broker gave no go-ahead (decision ${decisionName(res.decision)})`,
      },
    };
  }
  return { decided: announce({ decision: ToolDecision.ALLOWED, rule: res.rule || "loopd" }), result: await runLocal() };
}
