import { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import { checkingConnector, type RawResponse } from "../server-check/connection-check.js";
import type { UpstreamConfig } from "../config.js";
import { upstreamLabel } from "../config.js";
import { errnoOf, isConnectError } from "../error-mapping.js";
import { UpstreamConnectError, UpstreamTimeoutError } from "../errors.js";
import { Pool, buildConnector, request } from "./undici-pool.js";

/**
 * Response chunks in arrival order. An error is delivered only after every
 * chunk that came before it, and a reader that falls behind pauses the
 * socket instead of growing the queue without bound.
 */
class ChunkQueue implements AsyncIterable<Buffer> {
  private readonly items: Buffer[] = [];
  private ended = false;
  private error: unknown;
  private wake: (() => void) | undefined;
  private paused = false;

  constructor(private readonly ctl: Dispatcher.DispatchController) {}

  push(b: Buffer): void {
    this.items.push(b);
    if (this.items.length >= 256 && !this.paused) {
      this.paused = true;
      this.ctl.pause();
    }
    this.notify();
  }

  end(): void {
    this.ended = true;
    this.notify();
  }

  fail(err: unknown): void {
    this.error = err;
    this.notify();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Buffer> {
    for (;;) {
      const b = this.items.shift();
      if (b) {
        if (this.paused && this.items.length < 16) {
          this.paused = false;
          this.ctl.resume();
        }
        yield b;
        continue;
      }
      if (this.error !== undefined) throw this.error;
      if (this.ended) return;
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  async text(): Promise<string> {
    const parts: Buffer[] = [];
    for await (const b of this) parts.push(b);
    return Buffer.concat(parts).toString("utf8");
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }
}

/** A request body: text, bytes, or chunks of bytes sent one after another (messages-memory.ts). */
export type RequestBody = string | Uint8Array | readonly Uint8Array[];

function isChunks(body: RequestBody): body is readonly Uint8Array[] {
  return Array.isArray(body);
}

export interface StreamResponse {
  status: number;
  contentType: string;
  body: AsyncIterable<Buffer> & { text(): Promise<string> };
}

export interface JsonResponse {
  status: number;
  /** The parsed body, or undefined when it is not JSON. */
  json: unknown;
  text: string;
}

export interface JsonRequest {
  method: "GET" | "POST";
  path: string;
  body?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /**
   * Close the connection once answered instead of keeping it alive. For the
   * idle health poll: a kept connection would be closed by its keep-alive
   * timer seconds later, waking the daemon once more for nothing.
   */
  closeAfter?: boolean;
}

/**
 * Resets that mean "the server had already closed this idle keep-alive
 * connection when we wrote to it". llama-server closes idle connections on its
 * own timer; the request was then never read, so sending it again is safe
 * even for a POST.
 */
const STALE_SOCKET_CODES = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_CLOSED"]);

/**
 * HTTP/1.1 to llama-server over its Unix socket (or a URL in development),
 * with keep-alive connection reuse: a reused connection saves the connect on
 * every request, which is most of the added time to first token.
 */
export class LlamaClient {
  readonly label: string;
  private readonly pool: Pool;

  /**
   * `check`, when given, sees the server's `GET /props` answer on every new
   * connection before any request is sent on it, and throws to refuse it
   * (connection-check.ts).
   */
  constructor(upstream: UpstreamConfig, check?: { onProps: (res: RawResponse) => void; timeoutMs: number }) {
    this.label = upstreamLabel(upstream);
    const common = {
      // The watchdog in the completion stream is the only timeout on streams; per-call limits elsewhere.
      headersTimeout: 0,
      bodyTimeout: 0,
      keepAliveTimeout: 4_000,
      pipelining: 1,
    };
    const base = buildConnector(upstream.url ? {} : { socketPath: upstream.socket_path! });
    const connect = check ? checkingConnector(base, check.onProps, check.timeoutMs) : base;
    this.pool = upstream.url
      ? new Pool(upstream.url, { ...common, connect })
      : new Pool("http://llama-server", { ...common, connect });
  }

  /**
   * Starts a streamed POST; resolves once the response headers are in. Uses
   * undici's dispatch API rather than `request()`: a body stream destroyed by
   * a dropped connection discards chunks it had buffered, and the tokens that
   * arrived just before a crash are exactly what the partial event must keep.
   */
  async stream(path: string, body: RequestBody, signal: AbortSignal): Promise<StreamResponse> {
    return this.retryStale(() => this.dispatchStream(path, body, signal), signal);
  }

  private dispatchStream(path: string, body: RequestBody, signal: AbortSignal): Promise<StreamResponse> {
    return new Promise<StreamResponse>((resolve, reject) => {
      let controller: Dispatcher.DispatchController | undefined;
      let queue: ChunkQueue | undefined;
      const onAbort = () => {
        const reason = signal.reason instanceof Error ? signal.reason : new Error("aborted");
        if (controller) controller.abort(reason);
        else reject(reason);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      const done = () => signal.removeEventListener("abort", onAbort);
      this.pool.dispatch(
        {
          path,
          method: "POST",
          // Each attempt reads the chunks afresh (retryStale may send the body twice).
          body: isChunks(body) ? Readable.from(body, { objectMode: false }) : body,
          headers: {
            "content-type": "application/json",
            accept: "text/event-stream",
            // Chunks are written one after another; the length keeps it one plain request, not chunked.
            ...(isChunks(body) ? { "content-length": String(body.reduce((n, c) => n + c.length, 0)) } : {}),
          },
          headersTimeout: 0,
          bodyTimeout: 0,
        },
        {
          onRequestStart: (c) => {
            controller = c;
            if (signal.aborted) onAbort();
          },
          onResponseStart: (c, statusCode, headers) => {
            queue = new ChunkQueue(c);
            resolve({ status: statusCode, contentType: String(headers["content-type"] ?? ""), body: queue });
          },
          onResponseData: (_c, chunk) => queue?.push(chunk),
          onResponseEnd: () => {
            done();
            queue?.end();
          },
          onResponseError: (_c, err) => {
            done();
            if (queue) queue.fail(err);
            else reject(err);
          },
        },
      );
    });
  }

  /** A short JSON request: /props, /slots, /health, control, slot actions. */
  async json(req: JsonRequest): Promise<JsonResponse> {
    // A timer cleared when the request is done, not AbortSignal.timeout: that one fires anyway,
    // building a DOMException with a stack each time, long after the answer (a health poll's cost
    // while idle was mostly that).
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), req.timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout.signal]) : timeout.signal;
    try {
      const res = await this.send(
        {
          path: req.path,
          method: req.method,
          body: req.body,
          headers: req.body !== undefined ? { "content-type": "application/json" } : {},
          signal,
          ...(req.closeAfter ? { reset: true } : {}),
        },
        signal,
      );
      const text = await res.body.text();
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: res.statusCode, json, text };
    } catch (err) {
      if (timeout.signal.aborted && !req.signal?.aborted) {
        throw new UpstreamTimeoutError(`${req.method} ${req.path} took longer than ${req.timeoutMs} ms`);
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }

  /**
   * Runs a request, retrying once when a kept-alive connection turns out to
   * have been closed by the server; a refused connection is the server being down.
   */
  private async retryStale<T>(request: () => Promise<T>, signal: AbortSignal): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await request();
      } catch (err) {
        if (signal.aborted) throw signal.reason ?? err;
        if (isConnectError(err)) throw new UpstreamConnectError(this.label, err);
        // Once only: a second reset in a row is a server in trouble, not a stale connection.
        const code = errnoOf(err);
        if (attempt === 0 && code !== undefined && STALE_SOCKET_CODES.has(code)) continue;
        throw err;
      }
    }
  }

  /**
   * undici acts on an abort only once the request has a connection; a request
   * waiting for one (a server that accepts but never answers, e.g. stopped) would
   * outlive its time limit by the whole connection check. The caller is answered
   * at the abort; a response that still comes is drained.
   */
  private send(opts: Dispatcher.RequestOptions, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    const p = this.retryStale(() => request(this.pool, opts), signal);
    return new Promise<Dispatcher.ResponseData>((resolve, reject) => {
      const onAbort = () => {
        reject(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
        p.then(
          (r) => r.body.dump().catch(() => undefined),
          () => undefined,
        );
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      p.then(
        (r) => {
          signal.removeEventListener("abort", onAbort);
          resolve(r);
        },
        (e: unknown) => {
          signal.removeEventListener("abort", onAbort);
          reject(e);
        },
      );
    });
  }
}
