// What run-one.mjs hands every bench's default export. A bench module also
// exports `timeLimitS` (and `soakTimeLimitS` when it has a long form): about
// three times what it takes on the 2-core development machine while others
// use it, so noise passes and a hang is cut short; past it run.mjs kills it.

/** Records one figure under the bench's name (`bench.metric` in --json's document). */
export type Emit = (metric: string, value: number, unit: string) => void;

export interface BenchContext {
  /** `npm run bench:soak`: the long form of a bench that has one (a deeper prompt, a longer idle window). */
  soak: boolean;
  /** Marks the bench skipped, with one line saying why and how to get what it needs; the bench then returns. */
  skip(reason: string): void;
}
