import type { Command } from "commander";
import { sessionArgument } from "../completion/value-kinds.js";
import { withClient } from "../connection.js";
import type { GlobalOptions } from "../global-options.js";
import { output, proto } from "../output.js";

/** The one line a compaction is shown as (`boxmaker compact`, `/compact` in chat). */
export function compactedText(
  id: string,
  c:
    | {
        epoch: number;
        foldedMessages: number;
        keptMessages: number;
        summaryBytes: number;
        carriedFoldBytes: number;
        spilledBlocks: number;
        beforeTokens: number;
      }
    | undefined,
): string {
  if (!c) return `${id}: nothing to fold (no earlier turns and nothing large)\n`;
  return (
    `${id}: compacted into epoch ${c.epoch}: ${c.foldedMessages} messages folded into a ${c.summaryBytes}-byte summary` +
    (c.carriedFoldBytes ? `, ${c.carriedFoldBytes} bytes of earlier folds carried verbatim` : "") +
    `, ${c.keptMessages} kept` +
    (c.spilledBlocks ? `, ${c.spilledBlocks} blocks spilled to blobs` : "") +
    (c.beforeTokens ? ` (the slot held ${c.beforeTokens} tokens)` : "") +
    "\n"
  );
}

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("compact")
    .description("fold a session's earlier turns into a summary now, in a new epoch")
    .addArgument(sessionArgument("<id>", "session id"))
    .option("--json", "print the CompactSession response as JSON")
    .addHelpText(
      "after",
      `
The earlier turns stay in the session's log; the model continues from the
summary and the last turn. In \`boxmaker chat\`, /compact does the same.

Examples:
  boxmaker compact s-mx4f7p33-e9e25c52`,
    )
    .action(async (id: string, opts: { json?: boolean }) => {
      const res = await withClient(globals(), (client) => client.compactSession({ sessionId: id }));
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).CompactSessionResponseSchema, res),
        text: () => compactedText(id, res.compacted),
      });
    });
}
