import { describe, expect, it } from "vitest";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { SessionEventSchema, ToolDecision } from "@boxmaker/common/client";
import { activityLine, nextActivity, startActivity, type Activity } from "../src/render/turn-activity.js";
import { columns } from "../src/render/columns.js";

type EventInit = MessageInitShape<typeof SessionEventSchema>["event"];

/** The state after the events, each at the given ms (the turn starts at 0). */
function played(events: [number, EventInit][]): Activity {
  let a = startActivity(0);
  for (const [i, [ms, e]] of events.entries())
    a = nextActivity(a, create(SessionEventSchema, { sessionId: "s", seq: BigInt(i + 1), event: e }), ms);
  return a;
}

const started: [number, EventInit] = [0, { case: "turnStarted", value: { turn: 1, slot: 2 } }];
const progress = (ms: number, processed: number): [number, EventInit] => [
  ms,
  { case: "progress", value: { total: 5000, cache: 4200, processed, timeMs: 10 } },
];
const reasoning = (ms: number): [number, EventInit] => [ms, { case: "reasoning", value: { text: "hm" } }];
const content = (ms: number): [number, EventInit] => [ms, { case: "content", value: { text: "ok" } }];

describe("the live status line's text", () => {
  it("says the turn is waiting for the model before the server says anything, with the slot", () => {
    expect(activityLine(played([started]), 1200)).toBe("waiting for the model · 1 s · slot 2");
  });

  it("names the slot's queue: position and the session holding it", () => {
    const a = played([started, [5, { case: "waiting", value: { slot: 2, position: 1, heldBySession: "s-other" } }]]);
    expect(activityLine(a, 3000)).toBe("waiting for slot 2: 1 ahead (held by s-other) · 3 s · slot 2");
  });

  it("shows the prefill's progress and the prompt tokens the server reused from its cache", () => {
    expect(activityLine(played([started, progress(100, 4800)]), 2000)).toBe(
      "reading the prompt 4,800/5,000 · 2 s · cache 4,200/5,000 · slot 2",
    );
  });

  it("counts thinking tokens and their rate from the request's first token, with the key's hint", () => {
    const a = played([started, progress(100, 5000), reasoning(1000), reasoning(1500), reasoning(2000)]);
    expect(activityLine(a, 3000, undefined, "Ctrl-T shows reasoning")).toBe(
      "thinking · 3 s · 3 tok · 1.5 tok/s · cache 4,200/5,000 · slot 2 · Ctrl-T shows reasoning",
    );
  });

  it("goes on counting into the answer", () => {
    const a = played([started, reasoning(1000), content(1500), content(2000)]);
    expect(activityLine(a, 2000)).toBe("writing the answer · 2 s · 3 tok · 3.0 tok/s · slot 2");
  });

  it("names a tool call being written and its size, then the tool running, then the next request", () => {
    const writing = played([
      started,
      [10, { case: "toolCallProgress", value: { index: 0, callId: "c1", name: "edit_file", argumentBytes: 2048n } }],
    ]);
    expect(activityLine(writing, 1000)).toBe("┌ edit_file writing… 2.0 KB · 1 s · slot 2");
    const call: [number, EventInit] = [20, { case: "toolCall", value: { callId: "c1", name: "edit_file" } }];
    const running = played([
      started,
      call,
      [30, { case: "toolDecision", value: { callId: "c1", decision: ToolDecision.ALLOWED } }],
    ]);
    expect(activityLine(running, 1000)).toBe("running edit_file · 1 s · slot 2");
    const asking = played([
      started,
      call,
      [30, { case: "toolDecision", value: { callId: "c1", decision: ToolDecision.STAGED, proposalId: "p-1" } }],
    ]);
    expect(activityLine(asking, 1000)).toBe("waiting for approval of edit_file (p-1) · 1 s · slot 2");
    const back = nextActivity(
      running,
      create(SessionEventSchema, { event: { case: "toolResult", value: { callId: "c1" } } }),
      40,
    );
    expect(activityLine(back, 1000)).toBe("waiting for the model · 1 s · slot 2");
  });

  it("says the turn waits for the server while a request is retried, and the cache the resent one found", () => {
    const retry = (phase: string): [number, EventInit] => [
      50,
      { case: "retry", value: { phase, attempt: 1, maxAttempts: 3, promptCached: 0, promptReread: 900 } },
    ];
    expect(activityLine(played([started, retry("waiting")]), 65_000)).toBe(
      "waiting for the server (retry 1/3) · 1 min 5 s · slot 2",
    );
    expect(activityLine(played([started, retry("waiting"), retry("resent")]), 1000)).toBe(
      "waiting for the model · 1 s · cache 0/900 · slot 2",
    );
  });

  it("fits 40 columns by dropping figures from the end, then cutting the phase; 200 columns keep everything", () => {
    const a = played([started, progress(100, 5000), reasoning(1000), reasoning(2000)]);
    const hint = "Ctrl-T shows reasoning";
    const narrow = activityLine(a, 3000, 40, hint);
    expect(narrow).toBe("thinking · 3 s · 2 tok · 1.0 tok/s");
    expect(columns(narrow)).toBeLessThan(40);
    const wide = activityLine(a, 3000, 200, hint);
    expect(wide).toBe(activityLine(a, 3000, undefined, hint));
    expect(wide).toContain("cache 4,200/5,000 · slot 2 · Ctrl-T shows reasoning");
    const queued = played([
      started,
      [5, { case: "waiting", value: { slot: 2, position: 3, heldBySession: "s-mx4f7p33-e9e25c52" } }],
    ]);
    const cutLine = activityLine(queued, 1000, 40);
    expect(columns(cutLine)).toBe(39);
    expect(cutLine).toBe("waiting for slot 2: 3 ahead (held by s…");
  });
});
