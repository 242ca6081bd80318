import type { StreamResponse } from "../../src/upstream/llama-client.js";

/**
 * A response body the test writes into, in place of a socket: chunks are read
 * in order, an abort of the request fails the read with the abort's reason
 * (as LlamaClient's stream does), and `fail` drops the "connection".
 */
export class FakeBody implements AsyncIterable<Buffer> {
  private readonly items: Buffer[] = [];
  private ended = false;
  private error: unknown;
  private wake: (() => void) | undefined;
  private readerWaiting = false;
  private readonly onWait: Array<() => void> = [];

  /** The request's signal: its abort fails the read, as a real aborted request does. */
  abortOn(signal: AbortSignal): void {
    if (signal.aborted) this.fail(signal.reason);
    else signal.addEventListener("abort", () => this.fail(signal.reason), { once: true });
  }

  /** One SSE event per call, `data: …\n\n` added. */
  event(payload: unknown): this {
    return this.raw(`data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`);
  }

  raw(text: string): this {
    this.items.push(Buffer.from(text));
    this.notify();
    return this;
  }

  end(): void {
    this.ended = true;
    this.notify();
  }

  fail(err: unknown): void {
    this.error ??= err;
    this.notify();
  }

  /** Resolves when the reader has taken everything written so far and waits for more. */
  drained(): Promise<void> {
    if (this.readerWaiting) return Promise.resolve();
    return new Promise((r) => this.onWait.push(r));
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Buffer> {
    for (;;) {
      const b = this.items.shift();
      if (b) {
        yield b;
        continue;
      }
      if (this.error !== undefined) throw this.error;
      if (this.ended) return;
      const more = new Promise<void>((r) => (this.wake = r));
      this.readerWaiting = true;
      for (const w of this.onWait.splice(0)) w();
      await more;
      this.readerWaiting = false;
    }
  }

  async text(): Promise<string> {
    const parts: Buffer[] = [];
    for await (const b of this) parts.push(b);
    return Buffer.concat(parts).toString("utf8");
  }

  private notify(): void {
    this.readerWaiting = false;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }
}

export function streamResponse(body: FakeBody, status = 200): StreamResponse {
  return { status, contentType: status === 200 ? "text/event-stream" : "application/json", body };
}

/** A chunk as llama-server streams it, with only what a test needs. */
export function chunk(delta: Record<string, unknown>, finish: string | null = null, id = "chatcmpl-t"): unknown {
  return { id, model: "m", choices: [{ index: 0, finish_reason: finish, delta }] };
}

/** A promise the test settles by hand (Promise.withResolvers, which the project's lib target lacks). */
export function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
