import type { Command } from "commander";
import { connect } from "../connection.js";
import type { GlobalOptions } from "../global-options.js";
import { printOut } from "../render/terminal-safe.js";

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("cancel")
    .description("cancel the turn a session is running; the session stays usable")
    .argument("<id>", "session id")
    .option("--json", "print the CancelTurn response as JSON")
    .addHelpText(
      "after",
      `
Exits 0 whether or not a turn was running; --json says which.

Examples:
  boxmaker cancel s-mx4f7p33-e9e25c52`,
    )
    .action(async (id: string, opts: { json?: boolean }) => {
      const client = await connect(globals());
      try {
        const res = await client.cancelTurn({ sessionId: id });
        if (opts.json) {
          const { CancelTurnResponseSchema } = await import("@boxmaker/common/client");
          const { printJson } = await import("../json.js");
          return printJson(CancelTurnResponseSchema, res);
        }
        printOut(res.cancelled ? `cancelled the running turn of ${id}\n` : `${id} was not running a turn\n`);
      } finally {
        client.close();
      }
    });
}
