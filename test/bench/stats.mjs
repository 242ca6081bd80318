// Small statistics helpers shared by the benchmarks.
export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[i];
}
export const p50 = (v) => percentile(v, 50);
export const p99 = (v) => percentile(v, 99);
export const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
