import { describe, expect, it } from "vitest";
import { EventHub } from "../src/event-hub.js";

/** What a subscriber attaching after `afterSeq` is sent, up to the last event published. */
async function collect(hub: EventHub, afterSeq: number): Promise<string[]> {
  const out: string[] = [];
  if (afterSeq >= hub.lastSeq) return out;
  for await (const ev of hub.subscribe(afterSeq, new AbortController().signal)) {
    out.push(`${ev.seq}:${ev.event?.case}`);
    if (Number(ev.seq) >= hub.lastSeq) break;
  }
  return out;
}

describe("event hub", () => {
  it("replays the latest turn to a late subscriber, not every turn before it", async () => {
    const hub = new EventHub("s", 100);
    hub.publish({ case: "turnStarted", value: { turn: 1, slot: 0 } });
    hub.publish({ case: "content", value: { text: "a" } });
    hub.publish({ case: "turnStarted", value: { turn: 2, slot: 0 } });
    hub.publish({ case: "content", value: { text: "b" } });
    expect(await collect(hub, 0)).toEqual(["3:turnStarted", "4:content"]);
    expect(await collect(hub, 3)).toEqual(["4:content"]);
  });

  it("caps the backlog of one long turn", async () => {
    const hub = new EventHub("s", 3);
    hub.publish({ case: "turnStarted", value: { turn: 1, slot: 0 } });
    for (const t of ["a", "b", "c", "d"]) hub.publish({ case: "content", value: { text: t } });
    expect(await collect(hub, 0)).toEqual(["3:content", "4:content", "5:content"]);
  });
});

describe("a subscriber until the turn's end", () => {
  it("gets live events and stops after turn_done", async () => {
    const hub = new EventHub("s");
    hub.publish({ case: "turnStarted", value: { turn: 1, slot: 0 } });
    const seen: string[] = [];
    const done = (async () => {
      for await (const ev of hub.subscribe(0, new AbortController().signal, true)) seen.push(ev.event?.case ?? "");
    })();
    hub.publish({ case: "content", value: { text: "a" } });
    hub.publish({ case: "turnDone", value: { finishReason: "stop" } });
    hub.publish({ case: "content", value: { text: "next turn" } });
    await done;
    expect(seen).toEqual(["turnStarted", "content", "turnDone"]);
  });
});
