/**
 * Items from any number of producers to one reader, in the order pushed. The
 * reader's iteration ends once the queue is closed and drained; a push after
 * `close` is dropped (what comes after an end belongs to nobody).
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  /** Per item, what `offer` waits on: called when the reader comes back for the next item. */
  private readonly releases: Array<(() => void) | undefined> = [];
  private closed = false;
  private wake: (() => void) | undefined;

  push(item: T): void {
    if (this.closed) return;
    this.items.push(item);
    this.releases.push(undefined);
    this.wake?.();
  }

  /**
   * Pushes, and resolves once the reader has dealt with the item and come back
   * for the next (or the queue is closed, or its reader gone). A producer that
   * awaits it runs at the reader's pace, as a generator the reader pulled from
   * would: a stream writer giving the event loop a turn to send what it wrote
   * (FlushPacer) is not overtaken meanwhile by the producer's next work.
   */
  offer(item: T): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.items.push(item);
      this.releases.push(resolve);
      this.wake?.();
    });
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    let release: (() => void) | undefined;
    try {
      for (;;) {
        while (this.items.length) {
          // Asked for the next item: the reader is done with the last one.
          release?.();
          release = this.releases.shift();
          yield this.items.shift()!;
        }
        release?.();
        release = undefined;
        if (this.closed) return;
        await new Promise<void>((r) => {
          this.wake = r;
        });
        this.wake = undefined;
      }
    } finally {
      // A reader that stops early must not leave producers waiting on it.
      release?.();
      for (const r of this.releases.splice(0)) r?.();
    }
  }
}
