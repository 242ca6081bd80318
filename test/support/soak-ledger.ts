// What a soak run's clients saw, turn by turn, kept apart from the processes
// that produced it: every user message loopd acknowledged (a turn_started
// event), and how each turn ended. The soak bench checks the acknowledged ones
// against the session logs at the end.

/** How one turn ended, as its client saw it. */
export type TurnEnd =
  | { kind: "rejected"; reason: string }
  | { kind: "completed" }
  | { kind: "failed"; reason: string; generic: boolean };

/**
 * A failure message that names no cause: empty, only a status word, or only
 * a transport error ("Connection dropped", "read ECONNRESET") that does not
 * say which daemon or server went away. A turn that fails must tell the
 * person why; these do not.
 */
export function isGenericFailure(message: string): boolean {
  const m = message
    .trim()
    .replace(/^\d+\s+/, "")
    .replace(/^[A-Z_]+:\s*/, "")
    .replace(/[.:!]+$/, "");
  if (m.length < 8) return true;
  if (/^(read|write|connect) E[A-Z]+$|^connection (dropped|closed|reset)$|^stream refused by server$/i.test(m))
    return true;
  return /^(internal|unknown|error|failed|failure|undefined|null|cancelled|aborted)(\s+error)?(:\s*(internal|unknown|error)?)?$/i.test(
    m,
  );
}

/** A message with its numbers and ids blanked, so that one cause counts once however often it happens. */
export const failureShape = (message: string): string =>
  message
    .replace(/\/[\w./+-]+/g, "<path>")
    .replace(/\b[0-9a-f]{12,}\b/g, "<id>")
    .replace(/\d+(\.\d+)?/g, "N")
    .slice(0, 160);

export class SoakLedger {
  /** Per session: the markers of user messages loopd acknowledged. */
  readonly acknowledged = new Map<string, Set<string>>();
  readonly counts = { started: 0, completed: 0, failedWithReason: 0, failedWithoutReason: 0, rejected: 0 };
  /** Failure and rejection messages by shape, with how often each came. */
  readonly failures = new Map<string, number>();
  readonly rejections = new Map<string, number>();

  /** Per session: the markers of turns that ended in turn_done. */
  readonly completedTurns = new Map<string, Set<string>>();
  /** Turns that ended in turn_done "cancelled" though the client never cancelled them. */
  cancelledUnasked = 0;
  /** Sends whose stream ended a turn (turn_done, turn_failed) that never said it started, with the events seen. */
  readonly unstarted: { sessionId: string; events: string[] }[] = [];

  endedUnstarted(sessionId: string, events: string[]): void {
    this.unstarted.push({ sessionId, events });
  }

  ack(sessionId: string, marker: string): void {
    add(this.acknowledged, sessionId, marker);
    this.counts.started++;
  }

  record(end: TurnEnd, sessionId: string, marker: string): void {
    if (end.kind === "completed") {
      this.counts.completed++;
      add(this.completedTurns, sessionId, marker);
    } else if (end.kind === "rejected") {
      this.counts.rejected++;
      bump(this.rejections, failureShape(end.reason));
    } else {
      if (end.generic) this.counts.failedWithoutReason++;
      else this.counts.failedWithReason++;
      bump(this.failures, `${end.generic ? "[no reason] " : ""}${failureShape(end.reason)}`);
    }
  }
}

/** One logged message: its role, and its JSON as loopd returns it. */
export interface LoggedMessage {
  role: string;
  json: string;
}

export type Missing = { sessionId: string; marker: string }[];

/**
 * The acknowledged markers missing from the logged user messages, per session:
 * `logged` gives a session's messages as loopd returns them (or undefined when
 * the session itself cannot be read, and then all its markers are lost).
 */
export function lostTurns(
  acknowledged: ReadonlyMap<string, ReadonlySet<string>>,
  logged: ReadonlyMap<string, readonly LoggedMessage[] | undefined>,
): Missing {
  const lost: Missing = [];
  for (const [sessionId, markers] of acknowledged) {
    const msgs = logged.get(sessionId);
    for (const marker of markers) {
      if (!msgs?.some((m) => m.role === "user" && m.json.includes(marker))) lost.push({ sessionId, marker });
    }
  }
  return lost;
}

/**
 * Completed turns whose answer is not in the log: no assistant message between
 * the turn's user message and the next user message.
 */
export function unansweredTurns(
  completed: ReadonlyMap<string, ReadonlySet<string>>,
  logged: ReadonlyMap<string, readonly LoggedMessage[] | undefined>,
): Missing {
  const out: Missing = [];
  for (const [sessionId, markers] of completed) {
    const msgs = logged.get(sessionId) ?? [];
    for (const marker of markers) {
      const at = msgs.findIndex((m) => m.role === "user" && m.json.includes(marker));
      const next = msgs.findIndex((m, i) => i > at && m.role === "user");
      const turn = at < 0 ? [] : msgs.slice(at + 1, next < 0 ? undefined : next);
      if (!turn.some((m) => m.role === "assistant")) out.push({ sessionId, marker });
    }
  }
  return out;
}

function add(m: Map<string, Set<string>>, k: string, v: string): void {
  let set = m.get(k);
  if (!set) {
    set = new Set();
    m.set(k, set);
  }
  set.add(v);
}

const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
