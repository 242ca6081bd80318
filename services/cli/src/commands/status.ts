import type { Command } from "commander";
import { withClient } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import type { GlobalOptions } from "../global-options.js";
import { output } from "../output.js";
import { sourceText, type SocketChoice } from "../socket-choice.js";
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
      const g = globals();
      const st = await withClient(g, (client) => client.status({}));
      const stack = stackJson(await g.socket());
      const { healthy, renderStatus } = await renderer;
      await output(opts, {
        json: async (jsonOf) => ({
          value: {
            stack,
            ...JSON.parse(jsonOf((await import("@boxmaker/common/client")).LoopStatusResponseSchema, st)),
          },
        }),
        text: () =>
          `stack: ${stack.socket} (${stack.from})\n${renderStatus(st, styleFor(process.stdout), widthOf(process.stdout))}`,
      });
      const up = st.daemons.every((d) => d.reachable) && st.infer?.serverState === "ok";
      process.exitCode = healthy(st) ? ExitCode.ok : up ? ExitCode.failed : ExitCode.unavailable;
    });
}

/** Which stack `status` asked, and why that one: its --json "stack" object (snake_case, as the rest). */
function stackJson({ path, source }: SocketChoice) {
  return {
    socket: path,
    from: sourceText(source),
    source: source.kind,
    ...(source.kind === "config" ? { config_file: source.file } : {}),
    ...(source.kind === "up"
      ? { up_pid: source.stack.pid, runtime_dir: source.stack.runtimeDir, state_dir: source.stack.stateDir }
      : {}),
  };
}
