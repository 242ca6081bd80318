import { ErrorReason, RpcError, Status, messageOf, type ErrorDetailsInit } from "@boxmaker/common";

/** The `error` object llama-server sends, as an HTTP body or inside a 200 stream. */
export interface ServerErrorBody {
  code?: number;
  message?: string;
  type?: string;
  n_prompt_tokens?: number;
  n_ctx?: number;
  [k: string]: unknown;
}

/** What the request was, so the message can say what to do about it. */
export interface ErrorContext {
  upstream: string;
  slot?: number;
  /** What the caller was doing, e.g. "completion", "slot restore". */
  what: string;
  retryAfterMs: number;
}

/** Pulls `{error:{...}}` out of a body; anything else becomes a message-only error. */
export function errorBodyOf(body: unknown, fallbackText: string): ServerErrorBody {
  const e = (body as { error?: unknown } | null)?.error;
  if (e && typeof e === "object") return e as ServerErrorBody;
  if (typeof e === "string") return { message: e };
  return { message: fallbackText.slice(0, 500) || "(empty body)" };
}

function details(e: ServerErrorBody, status: number | undefined, ctx: ErrorContext): ErrorDetailsInit {
  return {
    upstream: ctx.upstream,
    ...(status !== undefined ? { httpStatus: status } : {}),
    ...(e.type ? { upstreamType: e.type } : {}),
    ...(uint32(e.code) !== undefined ? { upstreamCode: uint32(e.code) } : {}),
    ...(ctx.slot !== undefined ? { slot: ctx.slot } : {}),
  };
}

/** A number llama-server sent, if it fits the details' uint32 (anything else would not encode). */
function uint32(n: unknown): number | undefined {
  return typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= 0xffff_ffff ? n : undefined;
}

/** A non-200 answer from llama-server → the status a caller can act on. */
export function mapHttpError(status: number, body: ServerErrorBody, ctx: ErrorContext): RpcError {
  const msg = body.message ?? `HTTP ${status}`;
  const d = details(body, status, ctx);
  if (body.type === "exceed_context_size_error") return contextOverflow(body, d, ctx);
  if (status === 503 || body.type === "unavailable_error") {
    return new RpcError(Status.UNAVAILABLE, `llama-server is not ready (${msg}); retry in ${ctx.retryAfterMs} ms`, {
      ...d,
      retryAfterMs: ctx.retryAfterMs,
    });
  }
  if (status === 501 || body.type === "not_supported_error") {
    return new RpcError(Status.UNIMPLEMENTED, `llama-server does not support this ${ctx.what}: ${msg}`, d);
  }
  if (status === 404) return new RpcError(Status.NOT_FOUND, `llama-server: ${msg}`, d);
  if (status === 400 || status === 422) {
    // For slot actions the request was valid; the slot or its file was not.
    const code = ctx.what.startsWith("slot") ? Status.FAILED_PRECONDITION : Status.INVALID_ARGUMENT;
    return new RpcError(code, `llama-server rejected the ${ctx.what}: ${msg}`, d);
  }
  if (status === 429) return new RpcError(Status.RESOURCE_EXHAUSTED, `llama-server is busy: ${msg}`, d);
  // A 500 for a request we built is our fault or the server's; either way not the caller's to fix.
  return new RpcError(Status.INTERNAL, `llama-server failed the ${ctx.what} (HTTP ${status}): ${msg}`, d);
}

/**
 * An error object inside a 200 stream: the completion had started, so the
 * server gave up on it mid-way (e.g. its output parser rejected what the model
 * produced). A retry may well succeed, hence ABORTED rather than INTERNAL.
 */
export function mapStreamError(body: ServerErrorBody, ctx: ErrorContext): RpcError {
  const d = details(body, undefined, ctx);
  if (body.type === "exceed_context_size_error") return contextOverflow(body, d, ctx);
  if (body.type === "unavailable_error" || body.code === 503) {
    return new RpcError(Status.UNAVAILABLE, `llama-server became unavailable mid-stream: ${body.message ?? ""}`, {
      ...d,
      retryAfterMs: ctx.retryAfterMs,
    });
  }
  return new RpcError(Status.ABORTED, `llama-server aborted the completion: ${body.message ?? "(no message)"}`, d);
}

function contextOverflow(body: ServerErrorBody, d: ErrorDetailsInit, ctx: ErrorContext): RpcError {
  const nPrompt = body.n_prompt_tokens;
  const nCtx = body.n_ctx;
  const where = ctx.slot !== undefined ? `slot ${ctx.slot}` : "the slot";
  const msg =
    nPrompt !== undefined && nCtx !== undefined
      ? `the prompt is ${nPrompt} tokens but ${where} holds ${nCtx}: compact or summarise the conversation ` +
        `(or drop large tool results) to bring it under ${nCtx} tokens with room for the answer`
      : `the prompt does not fit in ${where}: ${body.message ?? ""}`;
  return new RpcError(Status.FAILED_PRECONDITION, msg, {
    ...d,
    reason: ErrorReason.CONTEXT_OVERFLOW,
    ...(uint32(nPrompt) !== undefined ? { nPromptTokens: uint32(nPrompt) } : {}),
    ...(uint32(nCtx) !== undefined ? { nCtx: uint32(nCtx) } : {}),
  });
}

/** Connection-level failures: the socket is missing, refused, or the server hung up. */
export function mapConnectError(err: unknown, ctx: ErrorContext): RpcError {
  const code = errnoOf(err);
  const why =
    code === "ENOENT"
      ? "the socket does not exist (is llama-server running?)"
      : code === "ECONNREFUSED"
        ? "nothing accepts connections there (is llama-server running?)"
        : code === "EACCES"
          ? "permission denied on the socket (is inferproxy in llama-server's group?)"
          : `${code ?? "connection error"}: ${messageOf(err)}`;
  return new RpcError(
    Status.UNAVAILABLE,
    `llama-server is not reachable at ${ctx.upstream}: ${why}`,
    { upstream: ctx.upstream, errno: code ?? "", retryAfterMs: ctx.retryAfterMs },
    { cause: err },
  );
}

/** undici sometimes wraps the socket error in `cause`. */
export function errnoOf(err: unknown): string | undefined {
  for (
    let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0;
    e && i < 4;
    e = e.cause as typeof e, i++
  ) {
    if (typeof e.code === "string") return e.code;
  }
  return undefined;
}

const CONNECT_CODES = new Set([
  "ENOENT",
  "ECONNREFUSED",
  "EACCES",
  "ENOTSOCK",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** True when the request never reached the server at all. */
export function isConnectError(err: unknown): boolean {
  const c = errnoOf(err);
  return c !== undefined && CONNECT_CODES.has(c);
}
