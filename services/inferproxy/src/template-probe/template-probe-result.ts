/**
 * What the template probe found (template-probe.ts runs it): the result
 * Status carries, and the verdict, warnings and sentence judged from it.
 */

import type { MessageShape } from "@bufbuild/protobuf";
import type {
  TemplateCorrectionSchema,
  TemplateProbeSchema,
  TemplateProbeStepSchema,
  TemplateShapeCheckSchema,
} from "@boxmaker/common";

// The shapes are the proto's (infer.proto's TemplateProbe), so a field added
// there is one the probe must fill; only the words a field may hold are
// narrowed here, and the time is a number until Status carries it.
type Fields<T> = Omit<T, "$typeName">;

export type ProbeStep = Fields<MessageShape<typeof TemplateProbeStepSchema>>;
type ShapeCheck = Fields<MessageShape<typeof TemplateShapeCheckSchema>>;

type ReasoningFinding = "kept" | "dropped" | "not_rendered" | "";
type Verdict = "ok" | "warn" | "no_tools";

export interface TemplateProbeResult
  extends Omit<
    Fields<MessageShape<typeof TemplateProbeSchema>>,
    "verdict" | "reasoning" | "steps" | "shapes" | "correction" | "probedAtUnixMs"
  > {
  verdict: Verdict | "";
  reasoning: ReasoningFinding;
  steps: ProbeStep[];
  shapes: ShapeCheck[];
  probedAtUnixMs: number;
  correction: TemplateCorrection;
}

/** A corrected template for one that is not prefix-stable (template-correction.ts). */
export interface TemplateCorrection extends Omit<Fields<MessageShape<typeof TemplateCorrectionSchema>>, "state"> {
  /** available | unavailable; "" when the template needs none. */
  state: "available" | "unavailable" | "";
}

export function noCorrection(): TemplateCorrection {
  return {
    state: "",
    reason: "",
    rules: [],
    template: "",
    templateSha256: "",
    predictedReuseRatio: 0,
    agreeingRenders: 0,
  };
}

export function probeNotRun(error = ""): TemplateProbeResult {
  return {
    ran: false,
    error,
    verdict: "",
    summary: error ? `template probe could not run: ${error}` : "",
    toolsRendered: false,
    toolsPosition: "",
    toolsMove: false,
    toolsTokens: 0,
    prefixStable: false,
    divergence: "",
    rereadTokensPerTurn: 0,
    predictedReuseRatio: 0,
    steps: [],
    reasoning: "",
    reasoningRereadTokens: 0,
    shapes: [],
    warnings: [],
    probedAtUnixMs: 0,
    templateSha256: "",
    correction: noCorrection(),
  };
}

/** The verdict, warnings and the one sentence, from the findings. */
export function judge(r: TemplateProbeResult): void {
  const warnings: string[] = [];
  const rejected = r.shapes.filter((s) => !s.accepted);
  if (!r.toolsRendered) {
    warnings.push(
      "the chat template renders no tools: the model would never see read_file, find_tool, call_tool or any tool, so completions with tools are refused",
    );
  }
  if (r.steps.length > 0 && !r.prefixStable) {
    warnings.push(
      `not prefix-stable: ${r.divergence}; each such turn re-reads up to ${r.rereadTokensPerTurn} tokens of the probe conversation ` +
        `(Σprompt_n over new tokens ${r.predictedReuseRatio.toFixed(2)}×)${r.toolsMove ? ` plus the whole tools array each time (${r.toolsTokens} tokens for the probe's 4 tools)` : ""}`,
    );
  }
  for (const s of rejected) warnings.push(`the template rejects ${s.shape}: ${s.error}`);
  r.warnings = warnings;
  r.verdict = !r.toolsRendered ? "no_tools" : warnings.length ? "warn" : "ok";
  const reasoning =
    r.reasoning === "kept"
      ? "earlier reasoning is kept"
      : r.reasoning === "dropped"
        ? `earlier reasoning is dropped at the next user message (a thinking model re-reads up to ${r.reasoningRereadTokens} tokens there)`
        : r.reasoning === "not_rendered"
          ? "reasoning is never rendered"
          : "";
  const head =
    r.verdict === "no_tools"
      ? "template renders no tools: tool use is refused"
      : r.verdict === "warn" && !r.prefixStable && r.steps.length > 0
        ? `template is not prefix-stable: a turn re-reads up to ${r.rereadTokensPerTurn} tokens (probe), ${r.toolsMove ? "the tools block moves before the last user message" : "earlier turns render differently"}`
        : r.steps.length === 0
          ? `template renders tools ${r.toolsPosition}; the probe conversation was rejected`
          : `template renders tools ${r.toolsPosition}, prefix-stable`;
  const tail = [rejected.length ? `${rejected.length} message shape(s) rejected` : "", reasoning].filter(Boolean);
  r.summary = `${head}${tail.length ? `; ${tail.join("; ")}` : ""} (\`boxmaker doctor\` for the table)`;
}
