export function percentile(values: number[], p: number): number;
export function p50(values: number[]): number;
export function p99(values: number[]): number;
export function nowMs(): number;
