import type { CacheHealth, TemplateProbe } from "@boxmaker/common/client";
import type { Style } from "./style.js";
import { table } from "./text.js";

/** The one sentence `up` and `status` print about the server's chat template. */
export function probeSentence(p: TemplateProbe | undefined, s: Style): string {
  if (!p?.ran) return s.yellow(p?.error ? `probe could not run: ${p.error}` : "not probed yet");
  const text = p.summary.replace(/ \(`boxmaker doctor` for the table\)$/, "");
  const colour = p.verdict === "ok" ? s.green : p.verdict === "no_tools" ? s.red : s.yellow;
  return `${colour(text)}${p.verdict === "ok" ? "" : s.dim(" — boxmaker doctor")}`;
}

/** Σprompt_n over new tokens, in words: "1.00× over 12 requests". */
export function reuseText(h: CacheHealth | undefined): string {
  if (!h?.requests) return "no follow-up requests measured yet";
  return `Σprompt_n/new ${h.ratio.toFixed(2)}× over ${h.requests} request${h.requests === 1 ? "" : "s"} (${h.promptN} read for ${h.newTokens} new)`;
}

/** `boxmaker doctor`: every finding of the probe. */
export function renderProbeTable(p: TemplateProbe | undefined, model: string, s: Style): string {
  const out: string[] = [s.bold(`chat template of ${model || "the served model"}`)];
  if (!p?.ran) {
    out.push(`  ${probeSentence(p, s)}`);
    return `${out.join("\n")}\n`;
  }
  const yes = (b: boolean, good = true) => (b === good ? s.green(b ? "yes" : "no") : s.red(b ? "yes" : "no"));
  const rows: string[][] = [
    ["verdict", p.verdict === "ok" ? s.green("ok") : p.verdict === "no_tools" ? s.red("no_tools") : s.yellow("warn")],
    ["template sha256", p.templateSha256 || "?"],
    [
      "tools rendered",
      `${yes(p.toolsRendered)}${p.toolsRendered ? ` (${p.toolsPosition}; ${p.toolsTokens} tokens for 4 tools)` : ""}`,
    ],
    ["tools block moves", yes(p.toolsMove, false)],
    ["prefix-stable", yes(p.prefixStable)],
  ];
  if (!p.prefixStable && p.divergence) rows.push(["first divergence", p.divergence]);
  rows.push(
    ["re-read per turn", `${p.rereadTokensPerTurn} tokens at most (probe conversation)`],
    ["Σprompt_n / new", `${p.predictedReuseRatio.toFixed(2)}× (the probe's; a lower bound: replies count as new)`],
    [
      "earlier reasoning",
      `${p.reasoning || "?"}${p.reasoningRereadTokens ? ` (${p.reasoning === "kept" ? "not sending reasoning_content back would re-read" : "a thinking model re-reads"} ${p.reasoningRereadTokens} tokens)` : ""}`,
    ],
  );
  out.push(indent(table(rows)));
  out.push("", s.bold("requests of the probe conversation"));
  const steps = [["AFTER", "PROMPT", "REUSED", "RE-READ", "NEW"].map((h) => s.dim(h))];
  for (const st of p.steps) {
    steps.push([
      st.after,
      String(st.promptTokens),
      String(st.reused),
      st.reread ? s.red(String(st.reread)) : "0",
      String(st.fresh),
    ]);
  }
  out.push(indent(table(steps)));
  out.push("", s.bold("message shapes Boxmaker sends"));
  out.push(
    indent(
      table(p.shapes.map((x) => [x.accepted ? s.green("✓") : s.red("✗"), x.shape, x.accepted ? "" : s.red(x.error)])),
    ),
  );
  if (p.warnings.length) {
    out.push("", s.bold("warnings"));
    for (const w of p.warnings) out.push(`  - ${s.yellow(w)}`);
  }
  const c = p.correction;
  if (c?.state === "available") {
    out.push("", s.bold("corrected template"));
    for (const r of c.rules) out.push(`  - ${r}`);
    out.push(
      `  the probe on it: prefix-stable, Σprompt_n/new ${c.predictedReuseRatio.toFixed(2)}× (was ${p.predictedReuseRatio.toFixed(2)}×); ` +
        `rendered by inferproxy, which agreed with llama-server on all ${c.agreeingRenders} renders of the loaded template`,
      `  ${s.green("boxmaker doctor --write-template FILE")} writes it; start llama-server with --chat-template-file FILE`,
    );
  } else if (c?.state === "unavailable") {
    out.push("", s.bold("corrected template"), `  ${s.yellow(`none: ${c.reason}`)}`);
  }
  return `${out.join("\n")}\n`;
}

const indent = (t: string) =>
  t
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
