import type { Command } from "commander";
import { withClient } from "../connection.js";
import type { GlobalOptions } from "../global-options.js";
import { output, proto } from "../output.js";
import { printOut } from "../render/terminal-safe.js";
import { styleFor } from "../render/style.js";

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("tools")
    .description("the core tools the model always sees, and what find_tool returns for a query")
    .argument("[query...]", "search the extended tools as find_tool would")
    .option("-n, --limit <n>", "most matches to show", "10")
    .option("--schema", "print each tool's JSON Schema for its arguments")
    .option("--prompts", "also list the prompt templates the MCP servers offer (never shown to the model)")
    .option("--json", "print the SearchTools response as one JSON object")
    .addHelpText(
      "after",
      `
Searching here does not disclose anything to a session; the model's own
find_tool calls do.

Examples:
  boxmaker tools
  boxmaker tools git history
  boxmaker tools --prompts
  boxmaker tools --json http | jq -r '.matches[].name'`,
    )
    .action(async (words: string[], opts: { limit: string; schema?: boolean; prompts?: boolean; json?: boolean }) => {
      const query = words.join(" ");
      const res = await withClient(globals(), (client) =>
        client.searchTools({ query, limit: Math.max(1, Number(opts.limit) || 10), includePrompts: !!opts.prompts }),
      );
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).SearchToolsResponseSchema, res),
        text: async () => {
          const { renderTools, renderPrompts } = await import("../render/tools.js");
          const style = styleFor(process.stdout);
          // Two writes, as two texts: a tool list ending in a lone CR must not pair with the next newline.
          printOut(renderTools(res, query, !!opts.schema, style));
          return opts.prompts ? `\n${renderPrompts(res.prompts, style)}` : undefined;
        },
      });
    });
}
