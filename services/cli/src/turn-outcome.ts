import { ToolDecision, type SessionEvent } from "@boxmaker/common/client";
import { ExitCode } from "./exit-codes.js";

/**
 * Decides the exit code a turn deserves from its events, independently of
 * how (or whether) they are rendered, so `--json` exits like the pretty path.
 */
export class TurnOutcome {
  exitCode: ExitCode = ExitCode.ok;
  done = false;
  private needsPerson = false;
  private readonly staged = new Set<string>();

  handle(ev: SessionEvent): void {
    const e = ev.event;
    switch (e.case) {
      case "toolDecision":
        if (e.value.decision === ToolDecision.DENIED) this.needsPerson = true;
        if (e.value.decision === ToolDecision.STAGED) this.staged.add(e.value.callId);
        break;
      case "toolResult":
        // A staged call that was approved in time is a success; one still
        // waiting (loopd's approval wait ran out) or rejected is not.
        if (this.staged.has(e.value.callId) && (e.value.isError || stillPending(e.value.content))) {
          this.needsPerson = true;
        }
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
        this.exitCode = e.value.code === "UNAVAILABLE" ? ExitCode.unavailable : ExitCode.failed;
        break;
      default:
        break;
    }
  }
}

/** loopd's wording when its approval wait ends without a decision (approvals.ts). */
function stillPending(content: string): boolean {
  return content.startsWith("staged for approval") && content.includes("nobody has decided");
}
