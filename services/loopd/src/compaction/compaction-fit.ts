/**
 * Making a request fit by the server's count, not the estimate from bytes: a
 * digit-heavy text costs about a token a byte where prose costs four or five,
 * so a request sized from bytes can be far over the slot. Pure but for the
 * count it is given, so the shrinking can be tested with any tokenizer.
 */

/** Tokens a request leaves unused below the slot's size: what a count of its parts does not see. */
const FIT_MARGIN_TOKENS = 256;

/** The most prompt tokens a request may have and still leave `answerTokens` for the answer. */
export function promptLimit(nCtx: number, answerTokens: number): number {
  return Math.max(0, nCtx - answerTokens - FIT_MARGIN_TOKENS);
}

export interface Fitted<T> {
  request: T;
  /** The server's count of it; undefined when the server could not count. */
  tokens: number | undefined;
  /** The budget it was built with. */
  budget: number;
}

/**
 * Builds the request at `budget`, counts it and, while it is over `limit`,
 * builds it again at a budget scaled by how far over it was (a tenth under,
 * as a cut does not take tokens evenly from the text). Gives up at
 * `minBudget` with the smallest it built: the caller says what did not fit.
 * A request the server cannot count is returned as built.
 */
export async function fitRequest<T>(o: {
  build: (budget: number) => T;
  count: (request: T) => Promise<number | undefined>;
  budget: number;
  limit: number;
  minBudget: number;
  attempts?: number;
}): Promise<Fitted<T>> {
  let budget = Math.max(o.minBudget, Math.floor(o.budget));
  for (let i = 0; ; i++) {
    const request = o.build(budget);
    const tokens = await o.count(request);
    if (tokens === undefined || tokens <= o.limit) return { request, tokens, budget };
    const next = Math.max(o.minBudget, Math.floor((budget * o.limit * 0.9) / tokens));
    if (next >= budget || i + 1 >= (o.attempts ?? 6)) return { request, tokens, budget };
    budget = next;
  }
}

/**
 * The start and the end of a text, `keepChars` of it in all, with a marker
 * saying what was cut in between: a tool result's note and pointer are at its
 * start, and its last lines are what a command ended with.
 */
export function cutMiddle(text: string, keepChars: number): string {
  if (text.length <= keepChars) return text;
  const head = Math.ceil(keepChars / 2);
  const tail = Math.floor(keepChars / 2);
  const cut = text.length - head - tail;
  return `${text.slice(0, head)}\n[… Boxmaker cut ${cut} characters here to fit the context …]\n${text.slice(text.length - tail)}`;
}

/** The texts of a message JSON the tokenizer reads: its content, reasoning and tool calls (not the JSON around them). */
export function messageText(json: string): string {
  const m = JSON.parse(json) as { content?: unknown; reasoning_content?: unknown; tool_calls?: unknown };
  const parts: string[] = [];
  if (typeof m.content === "string") parts.push(m.content);
  else if (m.content !== undefined && m.content !== null) parts.push(JSON.stringify(m.content));
  if (typeof m.reasoning_content === "string") parts.push(m.reasoning_content);
  if (m.tool_calls !== undefined) parts.push(JSON.stringify(m.tool_calls));
  return parts.join("\n");
}
