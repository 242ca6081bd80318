import { describe, expect, it } from "vitest";
import { SessionRole, ToolDecision } from "@boxmaker/common";
import { EventHub } from "../src/sessions/event-hub.js";
import { summarize } from "../src/sessions/session-index.js";
import { foldRecords } from "../src/sessions/session-state.js";
import { Session, type RecordSink } from "../src/sessions/session.js";
import { historyMessage, roleName, scheduleInfo, summaryInfo } from "../src/wire.js";

const head = {
  t: "session" as const,
  id: "s-1",
  role: "subagent" as const,
  title: "t",
  parent_id: "p",
  slot: 1,
  at: 5,
};
const nowhere: RecordSink = { path: "", length: 0, append: () => 0, appendAll: () => 0, close: () => undefined };

describe("sessions on the wire", () => {
  it("shows a session's state: archived, else running, else interrupted, else idle", () => {
    const st = foldRecords([
      head,
      { t: "turn_start", turn: 1, at: 6 },
      { t: "turn_end", turn: 1, reason: "interrupted", at: 7 },
    ]);
    const live = new Session(nowhere, st, new EventHub(st.id));
    expect(summaryInfo(summarize(st)).state).toBe("interrupted");
    live.running = new AbortController();
    expect(summaryInfo(summarize(st), live).state).toBe("running");
    expect(summaryInfo({ ...summarize(st), archived: true }, live).state).toBe("archived");
    expect(summaryInfo({ ...summarize(st), lastTurnEnd: "stop" }).state).toBe("idle");
    expect(summaryInfo(summarize(st))).toMatchObject({
      id: "s-1",
      role: SessionRole.SUBAGENT,
      parentId: "p",
      turns: 1,
      createdUnixMs: 5n,
      // Not in memory: no events yet.
      lastEventSeq: 0n,
    });
  });

  it("reads an unset role as a main session", () => {
    expect(roleName(SessionRole.UNSPECIFIED)).toBe("main");
    expect(roleName(SessionRole.SCHEDULED)).toBe("scheduled");
  });

  it("gives a tool result its decision in the wire's vocabulary; other messages carry none", () => {
    const tool = historyMessage({
      epoch: 0,
      json: "{}",
      at: 9,
      tool: { decision: "staged", rule: "ask-writes", is_error: false, proposal_id: "p1", proposal_state: "applied" },
    });
    expect(tool).toMatchObject({ decision: ToolDecision.STAGED, rule: "ask-writes", proposalId: "p1", atUnixMs: 9n });
    expect(historyMessage({ epoch: 0, json: "{}", at: 9 })).toEqual({ messageJson: "{}", epoch: 0, atUnixMs: 9n });
  });
});

describe("schedules on the wire", () => {
  it("show no last run before the first one", () => {
    const s = { id: "sch-1", cron: "0 3 * * *", prompt: "p", source: "api" as const, lastRunMs: 1, missedRuns: 2 };
    expect(scheduleInfo(s)).toMatchObject({ lastRunUnixMs: 0n, missedRuns: 2 });
    expect(scheduleInfo({ ...s, ranMs: 42 }).lastRunUnixMs).toBe(42n);
    expect(scheduleInfo(s).nextRunUnixMs).toBeGreaterThan(BigInt(Date.now()));
  });
});
