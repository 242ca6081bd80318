import type { ToolCallDelta } from "@boxmaker/common";
import type { EventBody } from "../sessions/event-hub.js";

/**
 * How often a growing tool call is announced at most. A 3,000-token file at
 * 30 tokens/s is 100 s of argument deltas: a few updates a second keep a
 * person informed without an event (and a client redraw) per token.
 */
const PROGRESS_EVERY_MS = 250;

interface Growing {
  callId: string;
  name: string;
  bytes: number;
  /** Bytes last announced (-1: not yet). */
  shown: number;
  shownAt: number;
}

/**
 * Turns the tool-call deltas of one streamed reply into tool_call_progress
 * events: one as soon as a call's name is known, then at most one per
 * interval while its arguments grow. The complete call is announced by the
 * loop afterwards (tool_call), so nothing here must be exact or final.
 */
export class ToolCallProgress {
  private readonly calls = new Map<number, Growing>();

  constructor(
    private readonly publish: (e: EventBody) => void,
    private readonly now: () => number = () => performance.now(),
    private readonly everyMs = PROGRESS_EVERY_MS,
  ) {}

  onDelta(d: ToolCallDelta): void {
    let c = this.calls.get(d.index);
    if (!c) {
      c = { callId: "", name: "", bytes: 0, shown: -1, shownAt: 0 };
      this.calls.set(d.index, c);
    }
    if (d.id) c.callId = d.id;
    // inferproxy names a call once (a late name fills a gap, it never rewrites one).
    if (d.name && !c.name) c.name = d.name;
    c.bytes += Buffer.byteLength(d.argumentsDelta);
    // Without a name there is nothing a person could read yet.
    if (!c.name) return;
    const first = c.shown < 0;
    if (!first && (c.bytes === c.shown || this.now() - c.shownAt < this.everyMs)) return;
    c.shown = c.bytes;
    c.shownAt = this.now();
    this.publish({
      case: "toolCallProgress",
      value: { index: d.index, callId: c.callId, name: c.name, argumentBytes: BigInt(c.bytes) },
    });
  }
}
