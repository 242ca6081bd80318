import { createHash } from "node:crypto";
import { localRender, type TemplateContext } from "./template-local-render.js";
import {
  noCorrection,
  runTemplateProbe,
  type ProbeIo,
  type TemplateCorrection,
  type TemplateProbeResult,
} from "./template-probe.js";

/**
 * A corrected chat template for a template that is not prefix-stable because
 * a block moves with the conversation: the block is rendered once, where the
 * conversation starts, so each request starts with the one before it. The
 * correction is judged by the same probe that found the fault, rendered here
 * (template-local-render.ts) and counted by the server's own tokenizer; the
 * operator passes it to llama-server with `--chat-template-file`.
 */
interface Rewrite {
  says: string;
  pattern: RegExp;
  replacement: string;
}

/**
 * The blocks known to move, as the families that have them write them
 * (Mistral Nemo and Mistral Small 3.x: tools and the system message are
 * rendered with the last user message).
 */
const REWRITES: readonly Rewrite[] = [
  {
    says: "the tools block is rendered with the first user message, not the last",
    pattern: /user_messages\[-1\]/g,
    replacement: "user_messages[0]",
  },
  {
    says: "the system message is rendered with the first user message, not the last",
    pattern: /\bloop\.last and system_message is defined\b/g,
    replacement: "message == user_messages[0] and system_message is defined",
  },
];

/** Every combination of the rewrites that apply to `source`, fewest first. */
export function candidateRewrites(source: string): Array<{ rules: string[]; template: string }> {
  const apply = REWRITES.filter((r) => new RegExp(r.pattern.source).test(source));
  const out: Array<{ rules: string[]; template: string }> = [];
  for (let mask = 1; mask < 1 << apply.length; mask++) {
    let template = source;
    const rules: string[] = [];
    apply.forEach((r, i) => {
      if (!(mask & (1 << i))) return;
      template = template.replace(r.pattern, r.replacement);
      rules.push(r.says);
    });
    out.push({ rules, template });
  }
  return out.sort((a, b) => a.rules.length - b.rules.length);
}

const rejected = (r: TemplateProbeResult) => r.shapes.filter((s) => !s.accepted).length;

/**
 * Tries each candidate through the probe and offers the first that is
 * prefix-stable, still renders the tools and rejects no more message shapes
 * than the original. `tokenize` is the server's.
 */
export async function correctTemplate(
  source: string,
  ctx: TemplateContext,
  tokenize: ProbeIo["tokenize"],
  original: TemplateProbeResult,
  agreeingRenders: number,
  nowMs: number,
): Promise<TemplateCorrection> {
  const c = noCorrection();
  c.agreeingRenders = agreeingRenders;
  const candidates = candidateRewrites(source);
  if (candidates.length === 0) {
    c.state = "unavailable";
    c.reason = `what moves is not a block Boxmaker knows how to move (${original.divergence || "the rendering diverges"})`;
    return c;
  }
  for (const cand of candidates) {
    const probe = await runTemplateProbe({ render: localRender(cand.template, ctx), tokenize }, nowMs);
    if (probe.toolsRendered && probe.prefixStable && probe.steps.length > 0 && rejected(probe) <= rejected(original)) {
      c.state = "available";
      c.rules = cand.rules;
      c.template = cand.template;
      c.templateSha256 = createHash("sha256").update(cand.template, "utf8").digest("hex");
      c.predictedReuseRatio = probe.predictedReuseRatio;
      return c;
    }
  }
  c.state = "unavailable";
  c.reason = `no rewrite Boxmaker knows makes this template prefix-stable (tried ${candidates.length}: ${candidates.at(-1)!.rules.join("; ")})`;
  return c;
}
