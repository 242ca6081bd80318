// gRPC's length-prefixed messages on an HTTP/2 stream: one flag byte
// (compressed or not), a four-byte big-endian length, then the message.
// DATA frames cut them anywhere, so the reader keeps what it has until a
// message is whole.

const PREFIX = 5;

/** A protobuf message as one gRPC message: never compressed (we only ever accept identity). */
export function encodeFrame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(PREFIX + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, PREFIX);
  return out;
}

export class FrameError extends Error {
  constructor(
    readonly kind: "too_large" | "compressed",
    message: string,
  ) {
    super(message);
    this.name = "FrameError";
  }
}

/** Reads whole messages out of a stream's chunks, whatever their cut. */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly maxMessageBytes: number) {}

  /** The messages this chunk completes, in order. */
  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const out: Buffer[] = [];
    while (this.buffered >= PREFIX) {
      const head = this.peek(PREFIX);
      const length = head.readUInt32BE(1);
      if (head[0] !== 0)
        throw new FrameError("compressed", "the server sent a compressed message, which was not asked for");
      if (length > this.maxMessageBytes)
        throw new FrameError("too_large", `a message of ${length} bytes is over the limit of ${this.maxMessageBytes}`);
      if (this.buffered < PREFIX + length) break;
      out.push(this.take(PREFIX + length).subarray(PREFIX));
    }
    return out;
  }

  /** Bytes of a message not yet whole: at the end of a stream, anything here was cut off. */
  get pendingBytes(): number {
    return this.buffered;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length >= n) return this.chunks[0]!;
    const all = Buffer.concat(this.chunks);
    this.chunks = [all];
    return all;
  }

  private take(n: number): Buffer {
    const head = this.peek(n);
    const rest = head.subarray(n);
    this.chunks[0] = rest;
    if (rest.length === 0) this.chunks.shift();
    this.buffered -= n;
    return head.subarray(0, n);
  }
}
