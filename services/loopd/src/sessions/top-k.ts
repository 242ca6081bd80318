/**
 * The best `limit` of a stream of items by an order, and how many were offered:
 * one pass that keeps only those (binary insertion into a short sorted array).
 * `ls` shows the 50 most recent of possibly thousands of sessions; sorting a copy
 * of them all on every call cost loopd milliseconds and a young collection.
 * Items that compare equal keep the order they were offered in.
 */
export class TopK<T> {
  readonly top: T[] = [];
  total = 0;

  constructor(
    private readonly limit: number,
    private readonly order: (a: T, b: T) => number,
  ) {}

  offer(item: T): void {
    this.total++;
    const top = this.top;
    if (top.length === this.limit && this.order(item, top[top.length - 1]!) >= 0) return;
    // First position whose item comes after this one: equal items stay in offer order.
    let lo = 0;
    let hi = top.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.order(item, top[mid]!) < 0) hi = mid;
      else lo = mid + 1;
    }
    top.splice(lo, 0, item);
    if (top.length > this.limit) top.pop();
  }
}
