// CompleteChannel through a real inferproxy on a real socket, in front of the
// simulator: what happens to completions when their caller goes away.
import { afterEach, describe, expect, it } from "vitest";
import { Status } from "@boxmaker/common";
import { startStack, userMessages, type Stack } from "./support/stack.js";

let s: Stack | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

describe("CompleteChannel", () => {
  it("a caller whose stream goes away stops every completion on it upstream, and frees their slots", async () => {
    s = await startStack();
    for (const slot of [0, 1])
      s.sim.enqueue({ content: Array.from({ length: 5_000 }, () => "x"), tokenDelayMs: 5 }, slot);
    const call = s.client.completeChannel();
    call.send({ callId: 1n, kind: { case: "start", value: { slot: 0, messagesJson: userMessages("a") } } });
    call.send({ callId: 2n, kind: { case: "start", value: { slot: 1, messagesJson: userMessages("b") } } });
    const streaming = new Set<bigint>();
    for await (const ev of call) {
      if (ev.kind.case === "event" && ev.kind.value.event.case === "content") streaming.add(ev.callId);
      if (streaming.size === 2) break; // leaving the loop cancels the stream
    }
    await Promise.all([s.sim.waitIdle(0), s.sim.waitIdle(1)]);
    expect(s.sim.completions.map((c) => c.outcome)).toEqual(["aborted", "aborted"]);
    const st = await s.client.status({});
    expect(st.slots.filter((x) => x.id <= 1).map((x) => x.heldBy)).toEqual(["", ""]);
  });

  it("refuses a second start under a call id still running, and the first runs on", async () => {
    s = await startStack();
    s.sim.enqueue({ content: "one answer", tokenDelayMs: 20 });
    const call = s.client.completeChannel();
    const start = { callId: 7n, kind: { case: "start" as const, value: { slot: 0, messagesJson: userMessages() } } };
    call.send(start);
    call.send(start);
    const ends: number[] = [];
    let content = "";
    for await (const ev of call) {
      if (ev.kind.case === "event" && ev.kind.value.event.case === "content") content += ev.kind.value.event.value.text;
      if (ev.kind.case === "end") {
        ends.push(ev.kind.value.code);
        if (ends.length === 2) call.end();
      }
    }
    expect(ends).toEqual([Status.ALREADY_EXISTS, Status.OK]);
    expect(content).toBe("one answer");
  });
});
