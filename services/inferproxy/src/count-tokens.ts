import { RpcError, Status, type CountTokensRequest, type CountTokensResponseSchema } from "@boxmaker/common";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { errorBodyOf, mapHttpError, type ErrorContext } from "./error-mapping.js";
import type { LlamaClient } from "./upstream/llama-client.js";

export type CountTokensInit = MessageInitShape<typeof CountTokensResponseSchema>;

/** Where a count's two upstream calls go (the template's rendering and the tokenizer), and for how long. */
export interface CountIo {
  client: LlamaClient;
  timeoutMs: number;
  signal: AbortSignal;
  ctx: ErrorContext;
}

function parseArray(json: string, what: string): unknown[] {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch (err) {
    throw new RpcError(
      Status.INVALID_ARGUMENT,
      `${what} is not JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (!Array.isArray(v)) throw new RpcError(Status.INVALID_ARGUMENT, `${what} is not a JSON array`);
  return v;
}

async function post(io: CountIo, path: string, body: unknown): Promise<unknown> {
  const res = await io.client.json({
    method: "POST",
    path,
    body: JSON.stringify(body),
    timeoutMs: io.timeoutMs,
    signal: io.signal,
  });
  if (res.status !== 200)
    throw mapHttpError(res.status, errorBodyOf(res.json, res.text), { ...io.ctx, what: `POST ${path}` });
  return res.json;
}

async function tokens(io: CountIo, content: string): Promise<number> {
  const t = ((await post(io, "/tokenize", { content })) as { tokens?: unknown } | undefined)?.tokens;
  if (!Array.isArray(t)) throw new RpcError(Status.INTERNAL, "llama-server's /tokenize answered no tokens array");
  return t.length;
}

/**
 * Counts as the served model will read it. The prompt is what the server's
 * template renders for these messages and tools (the same rendering as a
 * completion's), so the count includes the role markers and the tools block.
 */
export async function countTokens(req: CountTokensRequest, io: CountIo): Promise<CountTokensInit> {
  let promptTokens = 0;
  if (req.messagesJson) {
    const messages = parseArray(req.messagesJson, "messages_json");
    const tools = req.toolsJson ? parseArray(req.toolsJson, "tools_json") : [];
    const rendered = (await post(io, "/apply-template", { messages, ...(tools.length ? { tools } : {}) })) as
      | { prompt?: unknown }
      | undefined;
    if (typeof rendered?.prompt !== "string")
      throw new RpcError(Status.INTERNAL, "llama-server's /apply-template answered no prompt");
    promptTokens = await tokens(io, rendered.prompt);
  }
  const textTokens: number[] = [];
  for (const text of req.texts) textTokens.push(text ? await tokens(io, text) : 0);
  return { promptTokens, textTokens };
}
