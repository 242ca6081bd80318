import { describe, expect, it } from "vitest";
import { EventHub } from "../src/event-hub.js";

async function collect(hub: EventHub, afterSeq: number): Promise<string[]> {
  const ac = new AbortController();
  const out: string[] = [];
  const done = (async () => {
    for await (const ev of hub.subscribe(afterSeq, ac.signal)) out.push(`${ev.seq}:${ev.event?.case}`);
  })();
  await new Promise((r) => setTimeout(r, 5));
  ac.abort();
  await done;
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
