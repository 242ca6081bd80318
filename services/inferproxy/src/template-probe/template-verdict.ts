import { ErrorReason, RpcError, Status } from "@boxmaker/common";
import type { TemplateProbeResult } from "./template-probe.js";

/**
 * What the probe's verdict does to a completion. A template that renders no
 * tools would give the model a prompt without read_file, find_tool or
 * call_tool: the session would run, and the model would never act, so a
 * request carrying tools is refused (FAILED_PRECONDITION, one line: why and
 * what to do). Requests without tools are the template's to serve.
 */
export function refuseToolsIfUnrendered(probe: TemplateProbeResult, toolsJson: string, model: string): void {
  if (!probe.ran || probe.verdict !== "no_tools") return;
  if (toolsJson.trim() === "" || toolsJson.trim() === "[]") return;
  throw new RpcError(
    Status.FAILED_PRECONDITION,
    `refused for tool use: the chat template of ${model || "the model llama-server serves"} renders no tools, so the model would never see read_file, find_tool, call_tool or any tool; ` +
      "start llama-server with a template that renders tools (--chat-template-file) or another model; `boxmaker doctor` shows the template probe",
    { reason: ErrorReason.TEMPLATE_NO_TOOLS },
  );
}

/** The sentence a completion carries when the template is not prefix-stable (FinalMessage.template_warning). */
export function templateWarning(probe: TemplateProbeResult): string {
  if (!probe.ran || probe.steps.length === 0 || probe.prefixStable) return "";
  return `the chat template is not prefix-stable (${probe.divergence}; up to ${probe.rereadTokensPerTurn} tokens re-read per turn in the probe)`;
}
