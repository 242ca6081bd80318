/**
 * Which entries of a store a retention lets go: older than `keepDays`, or
 * beyond the newest `keepMax`. One rule for every store that keeps things a
 * person might come back to (decided proposals, checkpoints, archived
 * session logs), so each says the same thing about what "30 days / 10,000"
 * means. Pure: the store decides what letting go means (delete, compress).
 */
export interface Retention {
  /** Older than this many days goes; 0 keeps any age. */
  keepDays: number;
  /** At most this many stay, the newest; 0 keeps any number. */
  keepMax: number;
}

export const DAY_MS = 24 * 60 * 60 * 1000;

/** The entries past `r` at `now`, by the time `at` gives each (its last use or decision). */
export function pastRetention<T>(entries: Iterable<T>, at: (e: T) => number, r: Retention, now: number): T[] {
  const newestFirst = [...entries].sort((a, b) => at(b) - at(a));
  return newestFirst.filter(
    (e, i) => (r.keepDays > 0 && now - at(e) > r.keepDays * DAY_MS) || (r.keepMax > 0 && i >= r.keepMax),
  );
}
