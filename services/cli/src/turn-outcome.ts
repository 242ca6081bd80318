import { Status, ToolDecision, type SessionEvent } from "@boxmaker/common/client";
import { ExitCode } from "./exit-codes.js";

/**
 * Decides the exit code a turn deserves from its events, independently of
 * how (or whether) they are rendered, so `--json` exits like the pretty path.
 */
export class TurnOutcome {
  exitCode: ExitCode = ExitCode.ok;
  done = false;
  private needsPerson = false;

  handle(ev: SessionEvent): void {
    const e = ev.event;
    switch (e.case) {
      case "toolDecision":
        if (e.value.decision === ToolDecision.DENIED) this.needsPerson = true;
        break;
      case "toolResult":
        // A staged call that was approved in time is a success; one still
        // waiting (loopd's approval wait ran out), rejected or failed is not.
        if (e.value.proposalState && e.value.proposalState !== "applied") this.needsPerson = true;
        break;
      case "turnDone":
        this.done = true;
        this.exitCode =
          e.value.finishReason === "budget"
            ? ExitCode.budget
            : e.value.finishReason === "cancelled"
              ? ExitCode.interrupted
              : this.needsPerson
                ? ExitCode.needsApproval
                : ExitCode.ok;
        break;
      case "turnFailed":
        this.done = true;
        this.exitCode = e.value.status === Status.UNAVAILABLE ? ExitCode.unavailable : ExitCode.failed;
        break;
      default:
        break;
    }
  }
}
