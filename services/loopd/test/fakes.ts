import { create } from "@bufbuild/protobuf";
import {
  CallToolResponseSchema,
  CompletionEventSchema,
  ErrorReason,
  RpcError,
  Status,
  ToolDecision,
  createLogger,
  type CompleteRequest,
  type CallToolRequest,
  type CompletionEvent,
} from "@boxmaker/common";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { EventHub, SessionEventInit } from "../src/sessions/event-hub.js";

export const silentLog = createLogger("test", "silent");

export interface ScriptedReply {
  /** Thrown instead of a reply (an upstream error). */
  error?: Error;
  content?: string;
  reasoning?: string[];
  toolCalls?: { id: string; name: string; arguments: string; parseError?: string }[];
  finishReason?: string;
  promptN?: number;
  cacheN?: number;
  predictedN?: number;
  thinkingCapAt?: number;
  delayMs?: number;
}

/**
 * A fake inferproxy: replies from a script, records each request. With
 * `rememberMessages` it also keeps each request's whole messages array under
 * a token, as inferproxy does, and splices requests that name one (`wholeArrays`
 * holds what each request amounted to); `forget()` plays an inferproxy restart.
 */
export function fakeInfer(replies: ScriptedReply[], opts: { rememberMessages?: boolean } = {}) {
  const requests: CompleteRequest[] = [];
  const wholeArrays: string[] = [];
  const remembered = new Map<string, string>();
  let tokens = 0;
  return {
    requests,
    wholeArrays,
    forget: () => remembered.clear(),
    // As an inferproxy that cannot count: compaction estimates from bytes.
    countTokens: async (): Promise<never> => {
      throw new Error("not counted");
    },
    complete(
      req: MessageInitShape<typeof import("@boxmaker/common").CompleteRequestSchema>,
      callOpts?: { signal?: AbortSignal },
    ) {
      requests.push(req as CompleteRequest);
      let whole = req.messagesJson ?? "";
      if (req.afterMessagesToken) {
        const prefix = remembered.get(req.afterMessagesToken);
        if (prefix === undefined) {
          // As over gRPC: the error surfaces when the stream is read, not when the call is made.
          const refused: AsyncIterable<CompletionEvent> = {
            [Symbol.asyncIterator]: () => ({
              next: () =>
                Promise.reject(
                  new RpcError(Status.FAILED_PRECONDITION, "prefix unknown", { reason: ErrorReason.PREFIX_UNKNOWN }),
                ),
            }),
          };
          return refused;
        }
        const added = JSON.parse(whole) as unknown[];
        whole = added.length ? `${prefix.slice(0, -1)},${whole.slice(1)}` : prefix;
      }
      wholeArrays.push(whole);
      const token = opts.rememberMessages ? `t${++tokens}` : "";
      if (token) remembered.set(token, whole);
      const r = replies.shift() ?? { content: "ok" };
      const opts2 = callOpts;
      return (async function* (): AsyncGenerator<CompletionEvent> {
        const ev = (e: MessageInitShape<typeof CompletionEventSchema>) => create(CompletionEventSchema, e);
        if (r.delayMs) {
          await new Promise<void>((res, rej) => {
            const t = setTimeout(res, r.delayMs);
            opts2?.signal?.addEventListener("abort", () => {
              clearTimeout(t);
              rej(opts2.signal!.reason);
            });
          });
        }
        if (r.error) throw r.error;
        for (const t of r.reasoning ?? []) yield ev({ event: { case: "reasoning", value: { text: t } } });
        if (r.thinkingCapAt)
          yield ev({ event: { case: "thinkingCap", value: { reasoningTokens: r.thinkingCapAt, accepted: true } } });
        if (r.content) yield ev({ event: { case: "content", value: { text: r.content } } });
        const toolCalls = (r.toolCalls ?? []).map((t, index) => ({ index, type: "function", ...t }));
        const message = {
          role: "assistant",
          content: r.content ?? null,
          ...(toolCalls.length
            ? {
                tool_calls: toolCalls.map((t) => ({
                  id: t.id,
                  type: "function",
                  function: { name: t.name, arguments: t.arguments },
                })),
              }
            : {}),
        };
        yield ev({
          event: {
            case: "final",
            value: {
              messageJson: JSON.stringify(message),
              content: r.content ?? "",
              toolCalls,
              finishReason: r.finishReason ?? (toolCalls.length ? "tool_calls" : "stop"),
              reasoningTokens: r.reasoning?.length ?? 0,
              messagesToken: token,
              // Like the server: generation stops at the request's max_tokens.
              timings: {
                promptN: r.promptN ?? 10,
                cacheN: r.cacheN ?? 0,
                predictedN: Math.min(r.predictedN ?? 5, req.maxTokens ?? Infinity),
              },
            },
          },
        });
      })();
    },
  };
}

/** A fake brokerd that answers every call with the tool name and arguments. */
export function fakeBroker(
  decide: (
    req: CallToolRequest,
  ) => Partial<{ decision: ToolDecision; content: string; isError: boolean; proposalId: string }> = () => ({}),
) {
  const calls: CallToolRequest[] = [];
  return {
    calls,
    async callTool(req: MessageInitShape<typeof import("@boxmaker/common").CallToolRequestSchema>) {
      calls.push(req as CallToolRequest);
      const d = decide(req as CallToolRequest);
      return create(CallToolResponseSchema, {
        decision: d.decision ?? ToolDecision.ALLOWED,
        content: d.content ?? `result of ${req.name}(${req.argumentsJson})`,
        isError: d.isError ?? false,
        rule: "test",
        proposalId: d.proposalId ?? "",
      });
    },
  };
}

/**
 * The events a hub holds for its latest turn, up to the last one published:
 * read once the turn has returned, so no test has to sleep for a subscriber.
 */
export async function eventsSoFar(hub: EventHub): Promise<SessionEventInit[]> {
  const out: SessionEventInit[] = [];
  const last = hub.lastSeq;
  if (last === 0) return out;
  for await (const ev of hub.subscribe(0, new AbortController().signal)) {
    out.push(ev);
    if (Number(ev.seq) >= last) break;
  }
  return out;
}
