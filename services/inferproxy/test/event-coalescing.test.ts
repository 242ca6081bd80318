import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { CompletionEventInit } from "../src/completion/completion-stream.js";
import { coalesceEvents } from "../src/completion/event-coalescing.js";

const content = (text: string): CompletionEventInit => ({ event: { case: "content", value: { text } } });
const reasoning = (text: string): CompletionEventInit => ({ event: { case: "reasoning", value: { text } } });
const progress = (processed: number): CompletionEventInit => ({
  event: { case: "progress", value: { total: 100, cache: 0, processed, timeMs: processed } },
});
const toolCall = (args: string): CompletionEventInit => ({
  event: { case: "toolCall", value: { index: 0, id: "c", name: "f", argumentsDelta: args } },
});

describe("coalesceEvents: one upstream read, as few messages as it takes", () => {
  it("joins neighbouring deltas of a kind and keeps the latest progress, in order", () => {
    expect(
      coalesceEvents([
        progress(10),
        progress(100),
        reasoning("Let me "),
        reasoning("think."),
        content("The "),
        content("answer"),
        toolCall('{"a"'),
        toolCall(":1}"),
        content("."),
      ]),
    ).toEqual([
      progress(100),
      reasoning("Let me think."),
      content("The answer"),
      toolCall('{"a"'),
      toolCall(":1}"),
      content("."),
    ]);
  });

  it("a read of one delta is passed on unchanged", () => {
    const one = [content("x")];
    expect(coalesceEvents(one)).toEqual(one);
  });

  it("never changes the text a client assembles, for any sequence of deltas", () => {
    const delta = fc.oneof(
      fc.string().map((t) => content(t)),
      fc.string().map((t) => reasoning(t)),
      fc.nat(100).map((n) => progress(n)),
    );
    fc.assert(
      fc.property(fc.array(delta, { maxLength: 40 }), (evs) => {
        const text = (xs: CompletionEventInit[], kind: string) =>
          xs.flatMap((e) => (e.event?.case === kind ? [(e.event.value as { text: string }).text] : [])).join("");
        const out = coalesceEvents(evs);
        expect(text(out, "content")).toBe(text(evs, "content"));
        expect(text(out, "reasoning")).toBe(text(evs, "reasoning"));
        // no two neighbours of one kind are left (this generator makes no tool-call deltas)
        for (let i = 1; i < out.length; i++) expect(out[i]!.event?.case).not.toBe(out[i - 1]!.event?.case);
      }),
    );
  });
});
