// The hand-written SSE parser against eventsource-parser (#34's question), on
// what llama-server sends: a recorded reasoning stream repeated to 4 MiB, fed
// in 1,400-byte pieces as a socket hands them over, median of 7 runs. The
// events are the same (services/inferproxy/test/sse-parser-vs-library.test.ts);
// docs/decisions.md says why the parser stays.
import { readFileSync } from "node:fs";
import { createParser } from "eventsource-parser";
import { SseParser } from "../../services/inferproxy/dist/completion/sse-parser.js";
import { p50 } from "./stats.mjs";
import type { Emit } from "./bench-context.js";

export const timeLimitS = 60;

const MIB = 1024 * 1024;
const PIECE = 1400;

function medianMs(run: () => number, expected: number): number {
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t0 = performance.now();
    const n = run();
    times.push(performance.now() - t0);
    if (n !== expected) throw new Error(`a parser gave ${n} events, not ${expected}`);
  }
  return p50(times);
}

export default async function (emit: Emit): Promise<void> {
  const rec = JSON.parse(
    readFileSync(new URL("../fixtures/llama-server/reasoning-stream-with-control.json", import.meta.url), "utf8"),
  ) as { response: { body: string } };
  const one = rec.response.body.endsWith("\n\n") ? rec.response.body : `${rec.response.body}\n\n`;
  const bytes = new TextEncoder().encode(one.repeat(Math.ceil((4 * MIB) / one.length)));
  const pieces: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += PIECE) pieces.push(bytes.subarray(i, i + PIECE));
  const ours = () => {
    const p = new SseParser();
    let n = 0;
    for (const piece of pieces) n += p.push(piece).length;
    return n + p.end().length;
  };
  const library = () => {
    let n = 0;
    const p = createParser({ onEvent: () => n++ });
    const d = new TextDecoder();
    for (const piece of pieces) p.feed(d.decode(piece, { stream: true }));
    p.feed(d.decode());
    return n;
  };
  const events = ours();
  const mib = bytes.length / MIB;
  const a = medianMs(ours, events) / mib;
  const b = medianMs(library, events) / mib;
  emit("ours_ms_per_mib", a, "ms");
  emit("eventsource_parser_ms_per_mib", b, "ms");
  emit("library_over_ours", b / a, "x");
}
