import type { CompletionEventInit } from "./completion-stream.js";

/**
 * Merges the events of one upstream read: neighbouring content deltas become
 * one content event (their texts joined), reasoning deltas likewise, and of
 * neighbouring progress reports only the latest is kept (each one is a whole
 * snapshot). When the server is slower than the chain, as it is while
 * generating, a read holds one delta and nothing changes; when deltas pile
 * up (a fast server, a busy machine), every hop after this one carries one
 * message instead of dozens, and the client gets the same text sooner.
 * Tool-call deltas and everything else pass through as they are, in order.
 */
export function coalesceEvents(events: readonly CompletionEventInit[]): CompletionEventInit[] {
  const out: CompletionEventInit[] = [];
  for (const ev of events) {
    const prev = out.at(-1)?.event;
    const cur = ev.event;
    if (prev && cur && prev.case === cur.case) {
      if (cur.case === "progress") {
        out[out.length - 1] = ev;
        continue;
      }
      if (
        (cur.case === "content" || cur.case === "reasoning") &&
        (prev.case === "content" || prev.case === "reasoning")
      ) {
        out[out.length - 1] = {
          event: { case: cur.case, value: { text: `${prev.value?.text ?? ""}${cur.value?.text ?? ""}` } },
        };
        continue;
      }
    }
    out.push(ev);
  }
  return out;
}
