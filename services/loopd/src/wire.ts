import {
  DEFAULT_MODE,
  type SessionRole,
  SessionRoleSchema,
  decisionOf,
  enumNames,
  type SessionInfoSchema,
  type HistoryMessageSchema,
} from "@boxmaker/common";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { nextRun, type ScheduleState } from "./schedules.js";
import type { SessionSummary } from "./sessions/session-index.js";
import type { SessionRoleName } from "./sessions/session-log.js";
import type { StoredMessage } from "./sessions/session-state.js";
import type { Session } from "./sessions/session.js";

/**
 * How loopd's sessions, messages and schedules look on the wire. Pure
 * mappings, kept apart from the handlers so they can be read (and tested)
 * without a server.
 */

// UNSPECIFIED (a client that sets no role) is a main session.
const ROLES = enumNames<SessionRoleName>(SessionRoleSchema, "main");

export function sessionInfo(s: Session): MessageInitShape<typeof SessionInfoSchema> {
  return summaryInfo(s.summary(), s);
}

/** A session as the wire shows it; without `live` (not in memory) it has no running turn and no events yet. */
export function summaryInfo(sm: SessionSummary, live?: Session): MessageInitShape<typeof SessionInfoSchema> {
  const state = sm.archived
    ? "archived"
    : live?.running
      ? "running"
      : sm.lastTurnEnd === "interrupted"
        ? "interrupted"
        : "idle";
  return {
    id: sm.id,
    role: ROLES.valueOf(sm.role) as SessionRole,
    title: sm.title,
    epoch: sm.epoch,
    slot: sm.slot,
    state,
    messages: sm.messages,
    createdUnixMs: BigInt(sm.createdAt),
    updatedUnixMs: BigInt(sm.updatedAt),
    parentId: sm.parentId,
    contextTokens: sm.contextTokens,
    turns: sm.turn,
    turnStartedSeq: BigInt(live?.turnStartedSeq ?? 0),
    lastEventSeq: BigInt(live?.events.lastSeq ?? 0),
    instructionsFile: sm.instructionsFile,
    // An index written before modes existed has none: those sessions never set one.
    mode: sm.mode ?? DEFAULT_MODE,
  };
}

/** The role a request names; an unset role is a main session. */
export function roleName(role: SessionRole): SessionRoleName {
  return ROLES.nameOf(role);
}

/** A message of the session's history with how its tool call was decided, if it answers one. */
export function historyMessage(m: StoredMessage): MessageInitShape<typeof HistoryMessageSchema> {
  return {
    messageJson: m.json,
    epoch: m.epoch,
    atUnixMs: BigInt(m.at),
    ...(m.interrupted ? { interrupted: true } : {}),
    ...(m.tool
      ? {
          decision: decisionOf(m.tool.decision),
          rule: m.tool.rule,
          isError: m.tool.is_error,
          proposalId: m.tool.proposal_id ?? "",
          proposalState: m.tool.proposal_state ?? "",
        }
      : {}),
  };
}

export function scheduleInfo(s: ScheduleState) {
  return {
    id: s.id,
    cron: s.cron,
    prompt: s.prompt,
    // 0 before the first run (the CLI shows "never"), not the creation time the clock counts from.
    lastRunUnixMs: BigInt(s.ranMs ?? 0),
    nextRunUnixMs: BigInt(nextRun(s.cron, Date.now())),
    missedRuns: s.missedRuns,
  };
}
