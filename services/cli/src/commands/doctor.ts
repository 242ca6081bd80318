import { DEFAULT_KV_CACHE_TYPE } from "@boxmaker/common/lite";
import type { Command } from "commander";
import { withClient } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import type { GlobalOptions } from "../global-options.js";
import { output } from "../output.js";
import { printOut } from "../render/terminal-safe.js";
import { styleFor } from "../render/style.js";
import { type PlanFlags, planExit, servedPlan } from "./memory-plan.js";

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("doctor")
    .description(
      "what llama-server's chat template does with Boxmaker's conversations (the template probe), and the cache reuse measured",
    )
    .option("--json", "print the template probe and the cache health as one JSON object")
    .option(
      "--write-template <file>",
      "write the corrected chat template the probe offers (for llama-server's --chat-template-file); refuses to replace a file unless --force",
    )
    .option("--force", "with --write-template: replace FILE if it exists")
    .option("--model <file>", "the GGUF file for the memory plan, when llama-server does not name it by path")
    .option("--kv-type <type>", `the KV cache type the server runs (the memory plan assumes ${DEFAULT_KV_CACHE_TYPE})`)
    .option("--cap <size>", "the memory llama-server may use, e.g. 104GiB: exit 1 when the plan does not fit")
    .addHelpText(
      "after",
      `
inferproxy probes the template at every self-test: probe conversations rendered
by llama-server itself (/apply-template, /tokenize). Exit 0 when the verdict is
ok, 1 when it warns (not prefix-stable, a message shape rejected) or renders no
tools, 6 when the probe has not run (the stack or the server is not up).

A template that is not prefix-stable because a block moves with the
conversation (Mistral's tools and system message, rendered with the last user
message) gets a corrected template, judged by the same probe; --write-template
writes it. Start llama-server with --chat-template-file FILE (NixOS:
services.boxmaker.llamaServer.chatTemplateFile), then run
\`boxmaker contract accept\` (its sha256 is the new template's).

The memory plan (\`boxmaker memory-plan\`) is read from the served model's
GGUF file with the slots and context the self-test read from the server.

Examples:
  boxmaker doctor
  boxmaker doctor --cap 104GiB
  boxmaker doctor --json | jq '.template_probe.verdict'
  boxmaker doctor --write-template /etc/boxmaker/chat-template.jinja`,
    )
    .action(async (opts: PlanFlags & { json?: boolean; writeTemplate?: string; force?: boolean; model?: string }) => {
      const st = await withClient(globals(), (client) => client.status({}));
      const probe = st.infer?.templateProbe;
      if (opts.writeTemplate !== undefined) {
        const { writeCorrectedTemplate } = await import("../corrected-template.js");
        printOut(writeCorrectedTemplate(probe, opts.writeTemplate, opts.force === true));
        return;
      }
      const infer = st.infer;
      const memory = servedPlan(
        {
          model: infer?.model ?? "",
          slots: infer?.selfTest?.actualTotalSlots ?? 0,
          ctxPerSlot: infer?.selfTest?.actualNCtx ?? 0,
        },
        opts,
      );
      await output(opts, {
        json: async (jsonOf) => {
          const { TemplateProbeSchema, CacheHealthSchema, ThroughputSchema, BudgetsSchema } = await import(
            "@boxmaker/common/client"
          );
          const part = (text: string | undefined) => text ?? "null";
          return {
            document:
              `{"model":${JSON.stringify(st.infer?.model ?? "")},` +
              `"template_probe":${part(probe && jsonOf(TemplateProbeSchema, probe))},` +
              `"cache_health":${part(st.cacheHealth && jsonOf(CacheHealthSchema, st.cacheHealth))},` +
              `"memory_plan":${JSON.stringify(memory.json)},` +
              `"throughput":${part(infer?.throughput && jsonOf(ThroughputSchema, infer.throughput))},` +
              `"budgets":${part(st.budgets && jsonOf(BudgetsSchema, st.budgets))},` +
              `"max_tokens_per_request":${st.maxTokensPerRequest}}`,
          };
        },
        text: async () => {
          const { renderProbeTable, reuseText } = await import("../render/template-probe.js");
          const s = styleFor(process.stdout);
          // Two writes: the probe's table holds the server's words, which must not pair with the next line.
          printOut(renderProbeTable(probe, st.infer?.model ?? "", s));
          const { renderBudgetTimes } = await import("../render/budget-times.js");
          const budgets = renderBudgetTimes(st.budgets, st.maxTokensPerRequest, infer?.throughput);
          return `\n${s.bold("cache reuse (live, all sessions)")}  ${reuseText(st.cacheHealth)}\n\n${budgets}\n${memory.text}`;
        },
      });
      const probeExit = !probe?.ran ? ExitCode.unavailable : probe.verdict === "ok" ? ExitCode.ok : ExitCode.failed;
      process.exitCode = probeExit === ExitCode.ok && memory.plan ? planExit(memory.plan) : probeExit;
    });
}
