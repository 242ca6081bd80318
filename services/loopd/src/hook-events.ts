import { messageOf, type BrokerService, type ClientOf, type Logger } from "@boxmaker/common";

type Broker = Pick<ClientOf<typeof BrokerService>, "runHooks">;

/** Longer than any one hook may run (brokerd caps each at 10 minutes); the RPC is never what ends a hook. */
const RPC_DEADLINE_MS = 30 * 60_000;

/**
 * The hook events loopd sees, reported to brokerd, which runs the hooks. Never
 * awaited by a turn: a slow or failing hook (or brokerd being away) is a log
 * line, and the session goes on as if no hook were configured.
 */
export class HookEvents {
  constructor(
    private readonly broker: Broker,
    private readonly log: Logger,
  ) {}

  private send(req: {
    event: "session_start" | "turn_end" | "notification";
    sessionId: string;
    notificationKind?: string;
    message?: string;
    stopReason?: string;
  }): void {
    // Started inside the promise: a client that throws at once (closed, or without the method) is a log line too.
    Promise.resolve()
      .then(() => this.broker.runHooks(req, { timeoutMs: RPC_DEADLINE_MS }))
      .then((res) => {
        for (const r of res.runs)
          if (r.error || r.timedOut || r.exitCode !== 0)
            this.log.warn(
              { hook: r.name, origin: r.origin, event: req.event, exit_code: r.exitCode, error: r.error || undefined },
              "hook did not succeed",
            );
      })
      .catch((err: unknown) => this.log.warn({ event: req.event, err: messageOf(err) }, "hooks could not be run"));
  }

  sessionStart(sessionId: string): void {
    this.send({ event: "session_start", sessionId });
  }

  turnEnd(sessionId: string, stopReason: string): void {
    this.send({ event: "turn_end", sessionId, stopReason });
  }

  /** approval_waiting, budget_ended, schedule_failed: what a person away from the terminal wants to hear about. */
  notify(sessionId: string, kind: "approval_waiting" | "budget_ended" | "schedule_failed", message: string): void {
    this.send({ event: "notification", sessionId, notificationKind: kind, message });
  }
}
