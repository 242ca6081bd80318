import { statSync } from "node:fs";
import { messageOf } from "@boxmaker/common";
import { LogCorruptError, SessionReadOnlyError } from "../errors.js";
import { SessionLog, type LogRecord } from "./session-log.js";
import { foldRecords, quarantinedState, type SessionState } from "./session-state.js";
import { EventHub } from "./event-hub.js";
import { Session, type RecordSink } from "./session.js";

/** One session log read whole: nothing in it, a session, or a damaged one shown read-only. */
export type OpenedLog =
  | { kind: "empty" }
  | { kind: "read"; session: Session; droppedTailBytes: number }
  | { kind: "damaged"; session: Session; why: string };

/**
 * Reads the log at `path` (named `file`) into a session whose events are
 * numbered on from `lastSeq`. One bad log never stops loopd: what could be
 * read of it becomes a read-only session whose title says what is wrong.
 */
export function openSessionLog(path: string, file: string, lastSeq = 0): OpenedLog {
  let opened: ReturnType<typeof SessionLog.open> | undefined;
  let state: SessionState;
  try {
    opened = SessionLog.open(path);
    if (opened.records.length === 0) {
      opened.log.close();
      return { kind: "empty" };
    }
    state = foldRecords(opened.records);
  } catch (err) {
    opened?.log.close();
    const why = messageOf(err).replace(`${path}: `, "");
    const session = quarantined(path, file, err instanceof LogCorruptError ? err.validPrefix : [], why);
    return { kind: "damaged", session, why };
  }
  const { log, droppedTailBytes } = opened;
  return {
    kind: "read",
    session: new Session(log, state, new EventHub(state.id, undefined, lastSeq)),
    droppedTailBytes,
  };
}

/** A session whose log cannot be trusted: what could be read, a title saying what is wrong, and no writes. */
function quarantined(path: string, file: string, prefix: LogRecord[], why: string): Session {
  const state = quarantinedState(prefix, why, () => ({
    id: file.replace(/\.jsonl$/, ""),
    at: Math.round(statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()),
  }));
  return new Session(new ReadOnlyLog(path, state.id, why), state, new EventHub(state.id));
}

/** The log of a damaged session: shown, never written to. */
class ReadOnlyLog implements RecordSink {
  readonly length = 0;

  constructor(
    readonly path: string,
    private readonly sessionId: string,
    private readonly why: string,
  ) {}

  appendAll(): never {
    return this.append();
  }

  append(): never {
    throw new SessionReadOnlyError(
      `session ${this.sessionId} is read-only: its log ${this.path} is damaged (${this.why}); repair or delete it`,
    );
  }

  close(): void {}
}
