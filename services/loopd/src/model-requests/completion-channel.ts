import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  AsyncQueue,
  RpcError,
  Status,
  toRpcError,
  type BidiCall,
  type CallOptions,
  type ChannelEvent,
  type ChannelEventSchema,
  type ChannelRequestSchema,
  type ClientOf,
  type CompleteRequestSchema,
  type CompletionEvent,
  type InferService,
} from "@boxmaker/common";

type CompleteInit = MessageInitShape<typeof CompleteRequestSchema>;
type Stream = BidiCall<typeof ChannelRequestSchema, typeof ChannelEventSchema>;

/**
 * What a completion on the channel gets: its events, then its end — from
 * inferproxy (`fromServer`), or here (a cancel, a deadline, the stream's
 * failure).
 */
type Item = { event: CompletionEvent } | { end: RpcError | undefined; fromServer: boolean };

/** How long a cancelled completion waits for inferproxy's answer (its partial and end) before it ends here. */
const CANCEL_ANSWER_MS = 2000;

/**
 * Model requests to inferproxy over one long-lived CompleteChannel stream
 * instead of a Complete call each (a gRPC call set-up is the largest single
 * cost on a request's way to llama-server). `complete` keeps Complete's
 * contract: the completion's events, then the end, or an RpcError with the
 * status, details and cause the call would have ended with; a signal that
 * aborts cancels it — and, unlike a cancelled call, still delivers the
 * `partial` inferproxy answers a cancel with (what was streamed so far).
 * The stream is opened on first use and again after it
 * breaks (every completion on a broken stream fails UNAVAILABLE, as a broken
 * call would); a new stream waits up to `peerWaitMs` for inferproxy to be
 * connected, so a completion right after inferproxy restarted does not fail
 * on the channel's reconnect backoff. loopd and inferproxy ship and restart together, so an
 * inferproxy without CompleteChannel is a broken install, said as such.
 */
export class CompletionChannel {
  private stream: Stream | undefined;
  private readonly calls = new Map<bigint, (item: Item) => void>();
  private nextId = 0n;

  constructor(
    private readonly infer: Pick<ClientOf<typeof InferService>, "completeChannel" | "waitForReady">,
    /** How long a completion waits for inferproxy to be connected before the stream is opened; 0: not at all. */
    private readonly peerWaitMs = 0,
  ) {}

  readonly complete = (req: CompleteInit, opts?: CallOptions): AsyncIterable<CompletionEvent> => this.run(req, opts);

  /** Ends the stream; completions still on it fail as on a broken stream. */
  close(): void {
    this.stream?.cancel();
  }

  private async *run(req: CompleteInit, opts?: CallOptions): AsyncGenerator<CompletionEvent> {
    const signal = opts?.signal;
    signal?.throwIfAborted();
    // A stream opened while inferproxy restarts would fail at once: wait for it first (bounded).
    if (!this.stream && this.peerWaitMs) await this.infer.waitForReady(this.peerWaitMs, signal);
    const stream = this.open();
    const callId = ++this.nextId;
    // One completion's items; its end is the last: pushing it closes the queue.
    const q = new AsyncQueue<Item>();
    const push = (item: Item) => {
      q.push(item);
      if (!("event" in item)) q.close();
    };
    this.calls.set(callId, push);
    let over = false; // inferproxy is done with it: nothing to cancel there
    let cancelSent = false;
    let grace: NodeJS.Timeout | undefined;
    const cancelledHere = () => push({ end: new RpcError(Status.CANCELLED, "Cancelled on client"), fromServer: false });
    // A cancel goes to inferproxy at once; its answer (what was streamed, as a `partial`, then the
    // end) is read on for a moment, so the caller can keep an answer cut off mid-way.
    const onAbort = () => {
      if (this.stream !== stream) return cancelledHere();
      cancelSent = true;
      stream.send({ callId, kind: { case: "cancel", value: {} } });
      grace = setTimeout(cancelledHere, CANCEL_ANSWER_MS);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const timer = opts?.timeoutMs
      ? setTimeout(
          () => push({ end: new RpcError(Status.DEADLINE_EXCEEDED, "Deadline exceeded"), fromServer: false }),
          opts.timeoutMs,
        )
      : undefined;
    try {
      stream.send({ callId, kind: { case: "start", value: req } });
      for await (const item of q) {
        if ("event" in item) {
          yield item.event;
        } else {
          over = item.fromServer;
          if (item.end) throw item.end;
          return;
        }
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      if (timer) clearTimeout(timer);
      if (grace) clearTimeout(grace);
      this.calls.delete(callId);
      // Leaving early (a cancel, a break, a deadline) must stop the completion upstream too,
      // as cancelling its call would; a stream that broke has taken it down already.
      if (!over && !cancelSent && this.stream === stream) stream.send({ callId, kind: { case: "cancel", value: {} } });
    }
  }

  private open(): Stream {
    if (this.stream) return this.stream;
    const stream = this.infer.completeChannel();
    this.stream = stream;
    void this.read(stream);
    return stream;
  }

  private async read(stream: Stream): Promise<void> {
    let failure: RpcError;
    try {
      for await (const ev of stream) this.deliver(ev);
      failure = new RpcError(Status.UNAVAILABLE, "inferproxy ended the completion stream");
    } catch (err) {
      failure = toRpcError(err);
    }
    if (this.stream === stream) this.stream = undefined;
    if (failure.status === Status.UNIMPLEMENTED) {
      failure = new RpcError(
        Status.UNIMPLEMENTED,
        "inferproxy has no CompleteChannel: it is from another build than loopd; install and restart the stack together",
        {},
        { cause: failure },
      );
    }
    for (const push of this.calls.values()) push({ end: failure, fromServer: false });
  }

  private deliver(ev: ChannelEvent): void {
    const push = this.calls.get(ev.callId);
    if (!push) return; // a completion its caller already left
    if (ev.kind.case === "event") push({ event: ev.kind.value });
    else if (ev.kind.case === "end") {
      // ChannelEnd.code is the completion's numeric gRPC status, as a call would end with.
      const { code: status, message, details } = ev.kind.value;
      const end = status === Status.OK ? undefined : RpcError.fromWire(status, message, details);
      push({ end, fromServer: true });
    }
  }
}
