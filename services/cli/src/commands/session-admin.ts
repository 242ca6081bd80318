import type { Command } from "commander";
import { sessionArgument } from "../completion/value-kinds.js";
import { withClient } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import type { GlobalOptions } from "../global-options.js";
import { output, proto } from "../output.js";
import { printErr } from "../render/terminal-safe.js";
import { UsageError } from "../errors.js";

/** archive, rm and rename: a session's lifecycle. */
export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("archive")
    .description("archive a session: it leaves `ls` (see `ls -a`) and takes no more messages; its log stays")
    .addArgument(sessionArgument("<id>", "the session (see `boxmaker ls`)"))
    .option("--json", "print the archived session as JSON")
    .addHelpText("after", "\nExamples:\n  boxmaker archive s-mx2icmrq-ac4d6343")
    .action(async (id: string, opts: { json?: boolean }) => {
      const info = await withClient(globals(), (client) => client.archiveSession({ id }));
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).SessionInfoSchema, info),
        text: () => `archived session ${info.id} (${info.title || "untitled"})\n`,
      });
    });

  program
    .command("rm")
    .description("delete a session and its log for good")
    .addArgument(sessionArgument("<id>", "the session (see `boxmaker ls -a`)"))
    .option("-y, --yes", "do not ask for confirmation (required without a terminal)")
    .option("--json", 'print {"session", "deleted"} as one JSON object')
    .addHelpText(
      "after",
      `
Asks on a terminal; without one --yes is required. A running session must
be cancelled first. \`boxmaker export\` keeps a transcript before you delete.

Examples:
  boxmaker rm s-mx2icmrq-ac4d6343
  boxmaker rm -y s-mx2icmrq-ac4d6343`,
    )
    .action(async (id: string, opts: { yes?: boolean; json?: boolean }) => {
      if (!opts.yes && !process.stdin.isTTY) {
        throw new UsageError("rm without a terminal needs --yes (-y): there is nobody to ask for confirmation");
      }
      await withClient(globals(), async (client) => {
        const { session } = await client.getSession({ id });
        if (!opts.yes) {
          const { confirm } = await import("../confirm.js");
          const what = `session ${id} (${session?.title || "untitled"}, ${session?.messages ?? 0} messages)`;
          if (!(await confirm(`Delete ${what} for good?`))) {
            printErr("kept it\n");
            process.exitCode = ExitCode.needsApproval;
            return;
          }
        }
        // The id the person gave may be a prefix: what is deleted is said by its whole id.
        const full = session?.id || id;
        const res = await client.deleteSession({ id: full });
        await output(opts, {
          json: () => ({ value: { session: full, deleted: res.deleted } }),
          text: () => (res.deleted ? `deleted session ${full}\n` : `no session ${full}\n`),
        });
        if (!res.deleted) process.exitCode = ExitCode.failed;
      });
    });

  program
    .command("rename")
    .description("give a session a new title")
    .addArgument(sessionArgument("<id>", "the session (see `boxmaker ls`)"))
    .argument("<title...>", "the new title")
    .option("--json", "print the renamed session as JSON")
    .addHelpText("after", '\nExamples:\n  boxmaker rename s-mx2icmrq-ac4d6343 "fix the flaky parser test"')
    .action(async (id: string, words: string[], opts: { json?: boolean }) => {
      const info = await withClient(globals(), (client) => client.renameSession({ id, title: words.join(" ") }));
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).SessionInfoSchema, info),
        text: () => `session ${info.id} is now "${info.title}"\n`,
      });
    });
}
