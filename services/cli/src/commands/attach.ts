import type { Command } from "commander";
import { sessionArgument } from "../completion/value-kinds.js";
import { withClient } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import type { GlobalOptions } from "../global-options.js";
import { printErr } from "../render/terminal-safe.js";

interface AttachFlags {
  follow?: boolean;
  json?: boolean;
  reasoning?: boolean;
}

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("attach")
    .description("watch a session's running turn from another terminal, without taking it over")
    .addArgument(sessionArgument("<id>", "session id"))
    .option("-f, --follow", "keep watching after the turn ends (and wait for one if none is running)")
    .option("--json", "one JSON event per line on stdout")
    .option("--reasoning", "show the model's reasoning (dimmed) instead of a one-line summary")
    .addHelpText(
      "after",
      `
Stops when the turn ends, with the same exit code \`run\` would give it.
Ctrl-C stops watching; it does not cancel the turn (\`boxmaker cancel ID\` does).

Examples:
  boxmaker attach s-mx4f7p33-e9e25c52
  boxmaker attach --follow --json s-mx4f7p33-e9e25c52 | jq -c 'select(.tool_call)'`,
    )
    .action(async (id: string, opts: AttachFlags) => {
      const { renderEvents, resumingEvents } = await import("../turn-stream.js");
      const { followFrom, fromTurnStart } = await import("../attach-filter.js");
      const { CtrlC } = await import("../ctrl-c.js");
      await withClient(globals(), async (client) => {
        const r = await client.getSession({ id });
        const running = r.session?.state === "running";
        if (!running && !opts.follow) {
          printErr(`${id} is ${r.session?.state ?? "idle"}: no turn to attach to (--follow waits for the next one)\n`);
          return;
        }
        const ac = new AbortController();
        const ctrlC = new CtrlC(() => ac.abort());
        try {
          const follow = (afterSeq: bigint) => client.follow({ sessionId: id, afterSeq }, { signal: ac.signal });
          const events = fromTurnStart(resumingEvents(follow(followFrom(r.session!)), follow));
          process.exitCode = await renderEvents(events, {
            json: !!opts.json,
            reasoning: !!opts.reasoning,
            untilStreamEnd: !!opts.follow,
          });
        } catch (err) {
          if (!ac.signal.aborted) throw err;
          // Detaching is what the person asked for; the turn goes on in loopd.
          process.exitCode = opts.follow ? ExitCode.ok : ExitCode.interrupted;
        } finally {
          ctrlC.dispose();
        }
      });
    });
}
