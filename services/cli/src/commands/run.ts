import type { Command } from "commander";
import { connect } from "../connection.js";
import { readPrompt } from "../prompt-input.js";
import type { GlobalOptions } from "../global-options.js";

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("run")
    .description("run a one-shot task in a new session and stream it until done")
    .argument("<prompt...>", "the task; `-` reads it from stdin")
    .option("--json", "one JSON event per line on stdout")
    .option("--reasoning", "show the model's reasoning (dimmed)")
    .addHelpText(
      "after",
      `
Examples:
  boxmaker run "summarise README.md"
  git diff | boxmaker run -
  boxmaker run --json "list the TODOs in src/" | jq -r 'select(.content) | .content.text'`,
    )
    .action(async (words: string[], opts: { json?: boolean; reasoning?: boolean }) => {
      const text = await readPrompt(words);
      // Loaded here, not at the top: `boxmaker --help` must not pay for gRPC.
      const { SessionRole } = await import("@boxmaker/common");
      const { sendAndRender } = await import("../turn-stream.js");
      const client = await connect(globals().socket);
      const s = await client.createSession({ role: SessionRole.MAIN, title: text.slice(0, 80) });
      if (!opts.json) process.stderr.write(`session ${s.id}\n`);
      process.exitCode = await sendAndRender(client, s.id, text, { json: !!opts.json, reasoning: !!opts.reasoning });
      client.close();
    });
}
