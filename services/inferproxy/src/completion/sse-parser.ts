/**
 * Incremental Server-Sent Events parser for llama-server's streams.
 *
 * Only `data:` fields matter to us; each event's data (multi-line data joined
 * with "\n", as the SSE spec says) is returned as soon as its blank line
 * arrives, so nothing waits for the next network chunk. UTF-8 sequences split
 * across chunks are held back by the streaming decoder.
 */
export class SseParser {
  private readonly decoder = new TextDecoder("utf-8");
  private buf = "";
  private data: string[] = [];
  /** A "\r" ended the last chunk: a "\n" opening the next one belongs to it. */
  private pendingCr = false;

  push(chunk: Uint8Array): string[] {
    return this.pushText(this.decoder.decode(chunk, { stream: true }));
  }

  pushText(text: string): string[] {
    const out: string[] = [];
    let s = this.buf + text;
    if (this.pendingCr && s.startsWith("\n")) s = s.slice(1);
    this.pendingCr = false;
    let start = 0;
    for (;;) {
      const nl = nextLineEnd(s, start);
      if (nl < 0) break;
      this.line(s.slice(start, nl), out);
      if (s.charCodeAt(nl) === 13 /* \r */) {
        if (nl + 1 === s.length) {
          this.pendingCr = true;
          start = nl + 1;
          break;
        }
        start = s.charCodeAt(nl + 1) === 10 ? nl + 2 : nl + 1;
      } else {
        start = nl + 1;
      }
    }
    this.buf = s.slice(start);
    return out;
  }

  /**
   * End of body. The spec drops an event that never saw its blank line, but a
   * server that dies right after writing an error object is exactly when we
   * want to see it, so a complete trailing data line is still delivered.
   */
  end(): string[] {
    const out = this.pushText(this.decoder.decode());
    if (this.buf.length > 0) {
      this.line(this.buf, out);
      this.buf = "";
    }
    this.dispatch(out);
    return out;
  }

  private line(line: string, out: string[]): void {
    if (line.length === 0) {
      this.dispatch(out);
      return;
    }
    if (line.charCodeAt(0) === 58 /* ':' comment */) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field !== "data") return;
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    this.data.push(value);
  }

  private dispatch(out: string[]): void {
    if (this.data.length === 0) return;
    out.push(this.data.length === 1 ? this.data[0]! : this.data.join("\n"));
    this.data = [];
  }
}

function nextLineEnd(s: string, from: number): number {
  const n = s.indexOf("\n", from);
  // Servers we talk to use "\n"; only pay for a "\r" search when one exists.
  const r = s.indexOf("\r", from);
  if (r < 0) return n;
  if (n < 0) return r;
  return Math.min(n, r);
}
