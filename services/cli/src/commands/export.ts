import { Option, type Command } from "commander";
import { completesTo, sessionArgument } from "../completion/value-kinds.js";
import { withClient } from "../connection.js";
import type { GlobalOptions } from "../global-options.js";
import { UsageError } from "../errors.js";
import { jsonText, printErr, visible, writeJson } from "../render/terminal-safe.js";
import { printPaged } from "../pager.js";

interface ExportFlags {
  format: string;
  output?: string;
  reasoning?: boolean;
}

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("export")
    .description("write a session's transcript: Markdown to read, or JSON lines to process")
    .addArgument(sessionArgument("<id>", "the session (see `boxmaker ls -a`)"))
    .addOption(completesTo(new Option("-f, --format <format>", "md | jsonl").default("md"), { words: ["md", "jsonl"] }))
    .option("-o, --output <file>", "write here instead of stdout")
    .option("--reasoning", "include the model's reasoning (md; jsonl always has the stored message)")
    .addHelpText(
      "after",
      `
md: your messages, the assistant's answers (reasoning with --reasoning),
each tool call with its arguments, how it was decided (allowed, denied,
staged: the proposal and whether it was applied or rejected) and its result.
jsonl: one object per stored message, {epoch, at_unix_ms, message, decision,
rule, is_error, proposal_id, proposal_state}.

Examples:
  boxmaker export s-mx2icmrq-ac4d6343 > session.md
  boxmaker export --format jsonl -o session.jsonl s-mx2icmrq-ac4d6343`,
    )
    .action(async (id: string, opts: ExportFlags) => {
      if (opts.format !== "md" && opts.format !== "jsonl")
        throw new UsageError(`--format: md or jsonl, not "${opts.format}"`);
      const g = globals();
      const res = await withClient(g, (client) => client.getSession({ id }));
      const { transcriptMarkdown, transcriptJsonl } = await import("../render/transcript.js");
      // A file is read with cat and less as well: it gets the same visible controls as the terminal.
      const text =
        opts.format === "md"
          ? visible(transcriptMarkdown(res, { reasoning: !!opts.reasoning }))
          : jsonText(transcriptJsonl(res));
      if (opts.output) {
        const { writeFileSync } = await import("node:fs");
        writeFileSync(opts.output, text);
        printErr(`wrote ${opts.output}\n`);
      } else if (opts.format === "md") {
        await printPaged(text, g.pager);
      } else {
        writeJson(process.stdout, text);
      }
    });
}
