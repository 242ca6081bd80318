import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { SessionEventSchema, Status, ToolDecision, type SessionEvent } from "@boxmaker/common";
import { TurnOutcome } from "../src/turn-outcome.js";
import { followFrom, fromTurnStart } from "../src/attach-filter.js";

const ev = (event: SessionEvent["event"], seq = 1): SessionEvent =>
  create(SessionEventSchema, { sessionId: "s", seq: BigInt(seq), event });

function outcomeOf(events: SessionEvent["event"][]): TurnOutcome {
  const o = new TurnOutcome();
  for (const e of events) o.handle(ev(e));
  return o;
}
const turnDone = (finishReason: string) => ({ case: "turnDone", value: { finishReason } }) as SessionEvent["event"];
const decision = (d: ToolDecision, callId = "c1") =>
  ({ case: "toolDecision", value: { callId, decision: d } }) as SessionEvent["event"];
const result = (content: string, isError = false, proposalState = "", callId = "c1") =>
  ({ case: "toolResult", value: { callId, content, isError, proposalState } }) as SessionEvent["event"];

/** The exit code a turn earns, whatever renders it. */
describe("TurnOutcome", () => {
  it("maps finish reasons to exit codes", () => {
    expect(outcomeOf([turnDone("stop")]).exitCode).toBe(0);
    expect(outcomeOf([turnDone("budget")]).exitCode).toBe(3);
    expect(outcomeOf([turnDone("cancelled")]).exitCode).toBe(5);
    const failed = (status: Status) =>
      ({ case: "turnFailed", value: { code: Status[status], status } }) as SessionEvent["event"];
    expect(outcomeOf([failed(Status.UNAVAILABLE)]).exitCode).toBe(6);
    expect(outcomeOf([failed(Status.INTERNAL)]).exitCode).toBe(1);
    expect(outcomeOf([result("x")]).done).toBe(false);
  });

  it("a staged call approved in time is a success; still pending, rejected or denied is exit 4", () => {
    expect(
      outcomeOf([decision(ToolDecision.STAGED), result("Created a.txt", false, "applied"), turnDone("stop")]).exitCode,
    ).toBe(0);
    expect(
      outcomeOf([decision(ToolDecision.STAGED), result("staged; nobody decided", false, "pending"), turnDone("stop")])
        .exitCode,
    ).toBe(4);
    expect(
      outcomeOf([
        decision(ToolDecision.STAGED),
        result("the operator rejected this", true, "rejected"),
        turnDone("stop"),
      ]).exitCode,
    ).toBe(4);
    expect(outcomeOf([decision(ToolDecision.DENIED), result("denied", true), turnDone("stop")]).exitCode).toBe(4);
    // An error from an allowed call is the model's business, not the operator's.
    expect(
      outcomeOf([decision(ToolDecision.ALLOWED), result("error: no such file", true), turnDone("stop")]).exitCode,
    ).toBe(0);
  });
});

describe("attach's starting point", () => {
  it("follows a running turn from its turn_started event, otherwise only what comes next", () => {
    expect(followFrom({ state: "running", turnStartedSeq: 40n, lastEventSeq: 55n })).toBe(39n);
    expect(followFrom({ state: "idle", turnStartedSeq: 40n, lastEventSeq: 55n })).toBe(55n);
    // A turn that started before loopd restarted has no event in the backlog.
    expect(followFrom({ state: "running", turnStartedSeq: 0n, lastEventSeq: 3n })).toBe(3n);
  });

  it("starts output at a turn's beginning", async () => {
    async function* backlog() {
      yield ev({ case: "content", value: { text: "tail of an earlier turn" } } as SessionEvent["event"], 3);
      yield ev({ case: "turnStarted", value: { turn: 2, slot: 0 } } as SessionEvent["event"], 4);
      yield ev({ case: "content", value: { text: "new" } } as SessionEvent["event"], 5);
    }
    const seen: bigint[] = [];
    for await (const e of fromTurnStart(backlog())) seen.push(e.seq);
    expect(seen).toEqual([4n, 5n]);
  });
});
