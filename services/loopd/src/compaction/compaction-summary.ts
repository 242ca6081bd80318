import type { ClientOf, InferService } from "@boxmaker/common";
import { EmptySummaryError } from "../errors.js";
import { buildMessagesJson } from "../sessions/epoch-view.js";
import type { SessionState, StoredMessage } from "../sessions/session-state.js";
import { clippedTranscript } from "./compaction-policy.js";
import { systemMessageJson, userMessageJson } from "../sessions/messages.js";
import { bytesPerToken } from "../sessions/token-counts.js";
import { fitRequest, promptLimit } from "./compaction-fit.js";
import { isContextOverflow } from "../model-requests/completion.js";
import type { ServerTokens } from "./server-tokens.js";

/**
 * The model's summary of the turns a compaction folds: asked with a request
 * that reuses the slot's whole cached prefix when that fits, else from a
 * transcript clipped until the server's count says it fits.
 */

const SUMMARY_REQUEST =
  "[Boxmaker compaction] The conversation is about to outgrow the context window. Write a concise summary of " +
  "everything above that you will need to continue: the task, decisions, facts learned, file paths, blob pointers " +
  "(blob:sha256:…) and open questions. Quote exact values; do not call tools.";

const SUMMARY_REQUEST_AFTER_FOLDS =
  "[Boxmaker compaction] The conversation is about to outgrow the context window. The summary in the system prompt " +
  "is kept as it is. Write a concise summary of only the conversation after it: the task, decisions, facts learned, " +
  "file paths, blob pointers (blob:sha256:…) and open questions. Quote exact values; do not call tools.";

/** What summarising needs from the compactor: the server, its counts, the prompt now and the answer cap. */
export interface SummaryDeps {
  infer: Pick<ClientOf<typeof InferService>, "complete">;
  tokens: ServerTokens;
  /** Read at each request built (project instructions may have changed). */
  systemPrompt: () => string;
  maxTokens: number;
}

/** The turns to fold and what surrounds them. */
export interface SummaryInput {
  st: SessionState;
  folded: readonly StoredMessage[];
  /** The earlier folds, carried verbatim: the summary covers only what came after them. */
  carried: string;
  nCtx: number;
  /** After an overflow or when a person asked: the whole prefix is not tried, it may not fit. */
  mayNotFit: boolean;
}

interface SummaryRequest {
  messagesJson: string;
  toolsJson: string;
}

/** A transcript of the turns to fold, each message cut to its share of `budget` bytes. */
function transcriptRequest(systemPrompt: string, input: SummaryInput, request: string, budget: number): SummaryRequest {
  const lines = clippedTranscript(input.folded, budget);
  const earlier = input.carried ? `Earlier summary (kept as it is, do not repeat it):\n${input.carried}\n\n` : "";
  return {
    messagesJson: `[${systemMessageJson(systemPrompt)},${userMessageJson(
      `${earlier}Conversation to summarise:\n${lines.join("\n")}\n\n${request}`,
    )}]`,
    toolsJson: "",
  };
}

/** The transcript budget after the server refused `nPromptTokens`: scaled by how far over it was, else cut by 30%. */
function budgetAfterRefusal(budget: number, nPromptTokens: number, limit: number): number {
  return nPromptTokens > limit
    ? Math.max(2_048, Math.floor((budget * limit * 0.8) / nPromptTokens))
    : Math.floor(budget * 0.7);
}

export async function summarise(d: SummaryDeps, input: SummaryInput, signal: AbortSignal): Promise<string> {
  const { st, carried, nCtx } = input;
  const request = carried ? SUMMARY_REQUEST_AFTER_FOLDS : SUMMARY_REQUEST;
  const answerTokens = Math.min(d.maxTokens, 4096);
  const limit = nCtx ? promptLimit(nCtx, answerTokens) : Number.POSITIVE_INFINITY;
  const fitTranscript = (budget: number) =>
    fitRequest({
      build: (b) => transcriptRequest(d.systemPrompt(), input, request, b),
      count: (r) => (nCtx ? d.tokens.prompt(r.messagesJson, r.toolsJson, signal) : Promise.resolve(undefined)),
      budget,
      limit,
      minBudget: 2_048,
    });

  let req: SummaryRequest | undefined;
  let budget = Math.floor((nCtx * bytesPerToken(st)) / 2);
  if (nCtx === 0 || !input.mayNotFit) {
    const base = buildMessagesJson(st);
    const wholeTokens = Math.ceil(Buffer.byteLength(base) / bytesPerToken(st));
    if (nCtx === 0 || wholeTokens + 1024 + answerTokens < nCtx) {
      // Reuses the slot's cached prefix: costs only the instruction and the answer, if the server agrees it fits.
      const whole = {
        messagesJson: `${base.slice(0, -1)},${userMessageJson(request)}]`,
        toolsJson: st.epoch.toolsJson,
      };
      const n = nCtx ? await d.tokens.prompt(whole.messagesJson, whole.toolsJson, signal) : undefined;
      if (n === undefined || n <= limit) req = whole;
    }
  }
  if (!req) {
    const fit = await fitTranscript(budget);
    req = fit.request;
    budget = fit.budget;
  }
  let text = "";
  // A refused request says how long it was: cut the transcript by that and ask again, twice at most.
  for (let attempt = 0; ; attempt++) {
    try {
      text = await askSummary(d, st, req, answerTokens, signal);
      break;
    } catch (err) {
      if (!isContextOverflow(err) || attempt >= 2 || !nCtx) throw err;
      budget = budgetAfterRefusal(budget, err.details.nPromptTokens, limit);
      req = (await fitTranscript(budget)).request;
    }
  }
  if (!text.trim()) throw new EmptySummaryError();
  return text.trim();
}

async function askSummary(
  d: SummaryDeps,
  st: SessionState,
  req: SummaryRequest,
  answerTokens: number,
  signal: AbortSignal,
): Promise<string> {
  let text = "";
  for await (const ev of d.infer.complete(
    {
      slot: st.slot,
      messagesJson: req.messagesJson,
      toolsJson: req.toolsJson,
      maxTokens: answerTokens,
      thinkingCapTokens: 512,
      requestId: `${st.id}/compaction`,
    },
    { signal },
  )) {
    if (ev.event.case === "final") text = ev.event.value.content;
  }
  return text;
}
