import type { Command } from "commander";
import { withClient } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import type { GlobalOptions } from "../global-options.js";
import { output, proto } from "../output.js";
import { styleFor } from "../render/style.js";
import { widthOf } from "../render/columns.js";

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("status")
    .description("health of each daemon, llama-server build and self-test, slots and who holds them")
    .option("--json", "print the Status response as one JSON object")
    .addHelpText(
      "after",
      `
Exit 0 when everything is up and the self-test passed, 6 when a daemon is
unreachable or llama-server is not serving, 1 when the self-test failed.

Examples:
  boxmaker status
  boxmaker status --json | jq '.infer.self_test.passed'`,
    )
    .action(async (opts: { json?: boolean }) => {
      // Loaded while loopd asks the other daemons, which the CLI would otherwise wait through idle.
      const renderer = import("../render/status.js");
      const st = await withClient(globals(), (client) => client.status({}));
      const { healthy, renderStatus } = await renderer;
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).LoopStatusResponseSchema, st),
        text: () => renderStatus(st, styleFor(process.stdout), widthOf(process.stdout)),
      });
      const up = st.daemons.every((d) => d.reachable) && st.infer?.serverState === "ok";
      process.exitCode = healthy(st) ? ExitCode.ok : up ? ExitCode.failed : ExitCode.unavailable;
    });
}
