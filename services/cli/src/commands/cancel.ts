import type { Command } from "commander";
import { sessionArgument } from "../completion/value-kinds.js";
import { withClient } from "../connection.js";
import type { GlobalOptions } from "../global-options.js";
import { output, proto } from "../output.js";

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("cancel")
    .description("cancel the turn a session is running; the session stays usable")
    .addArgument(sessionArgument("<id>", "session id"))
    .option("--json", "print the CancelTurn response as JSON")
    .addHelpText(
      "after",
      `
Exits 0 whether or not a turn was running; --json says which.

Examples:
  boxmaker cancel s-mx4f7p33-e9e25c52`,
    )
    .action(async (id: string, opts: { json?: boolean }) => {
      const res = await withClient(globals(), (client) => client.cancelTurn({ sessionId: id }));
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).CancelTurnResponseSchema, res),
        text: () => (res.cancelled ? `cancelled the running turn of ${id}\n` : `${id} was not running a turn\n`),
      });
    });
}
