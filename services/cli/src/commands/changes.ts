import type { Command } from "commander";
import { sessionArgument } from "../completion/value-kinds.js";
import { withClient } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import type { GlobalOptions } from "../global-options.js";
import { UsageError } from "../errors.js";
import { output, proto } from "../output.js";
import { printErr } from "../render/terminal-safe.js";
import { styleFor } from "../render/style.js";
import { ago } from "../render/text.js";
import { widthOf } from "../render/columns.js";

/** `changes` lists a session's applied writes with their diffs; `undo` restores them. */
export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("changes")
    .description("a session's applied file writes and edits, each with its diff")
    .addArgument(sessionArgument("<id>", "the session (see `boxmaker ls`)"))
    .option("--stat", "one line per change, no diffs")
    .option("--json", "print the ListChanges response as one JSON object")
    .addHelpText(
      "after",
      `
Every write_file / edit_file that was applied (allowed by policy or approved
by a person) keeps the file's previous content; \`boxmaker undo\` restores it.

Examples:
  boxmaker changes s-mx2icmrq-ac4d6343
  boxmaker changes --stat s-mx2icmrq-ac4d6343`,
    )
    .action(async (id: string, opts: { stat?: boolean; json?: boolean }) => {
      const res = await withClient(globals(), (client) => client.listChanges({ sessionId: id }));
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).ListChangesResponseSchema, res),
        text: async () => {
          if (!res.changes.length) {
            printErr(`session ${id} has changed no files\n`);
            return;
          }
          const { renderDiff } = await import("../render/proposal.js");
          const s = styleFor(process.stdout);
          const out: string[] = [];
          for (const c of res.changes) {
            const state = c.undoneUnixMs ? s.yellow(`undone ${ago(c.undoneUnixMs)}`) : s.green("applied");
            const how = c.proposalId ? `approved as ${c.proposalId}` : "allowed by policy";
            out.push(
              `${s.bold(c.id)}  ${c.tool} ${c.path}${c.created ? " (new file)" : ""}  ${state}  ${s.dim(`${ago(c.appliedUnixMs)} · ${how}`)}`,
            );
            if (!opts.stat) out.push(renderDiff(c.diff, s, widthOf(process.stdout)), "");
          }
          return `${out.join("\n").trimEnd()}\n`;
        },
      });
    });

  program
    .command("undo")
    .description("restore the files a session's last changes wrote")
    .addArgument(sessionArgument("<id>", "the session (see `boxmaker ls`)"))
    .option("-n, --last <n>", "how many of the latest changes not undone yet", "1")
    .option("--all", "every change of the session not undone yet")
    .option("--force", "restore a file even if it changed since the session wrote it")
    .option("--json", "print the UndoChanges response as one JSON object")
    .addHelpText(
      "after",
      `
Newest first. A created file is deleted; an edited or overwritten one gets
its previous content back. A file that changed since (you or another tool
edited it) is refused unless --force. The session's next turn is told what
was undone. Exit 0 when everything asked for was undone, 1 when something
was refused.

Examples:
  boxmaker undo s-mx2icmrq-ac4d6343
  boxmaker undo --last 3 s-mx2icmrq-ac4d6343
  boxmaker undo --all --force s-mx2icmrq-ac4d6343`,
    )
    .action(async (id: string, opts: { last: string; all?: boolean; force?: boolean; json?: boolean }) => {
      const last = opts.all ? 0 : Number(opts.last);
      if (!opts.all && (!Number.isInteger(last) || last < 1))
        throw new UsageError(`--last needs a positive number, not "${opts.last}"`);
      const res = await withClient(globals(), (client) =>
        client.undoChanges({ sessionId: id, last, force: !!opts.force }),
      );
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).UndoChangesResponseSchema, res),
        text: async () => {
          if (!res.results.length) return void printErr(`session ${id} has no change left to undo\n`);
          const s = styleFor(process.stdout);
          const tag = (r: string) => (r === "refused" ? s.red("refused") : s.green(r));
          return res.results.map((r) => `${tag(r.result)}  ${r.message}\n`).join("");
        },
      });
      if (res.results.some((r) => r.result === "refused")) process.exitCode = ExitCode.failed;
    });
}
