import type { Command } from "commander";
import { withClient } from "../connection.js";
import { UsageError } from "../errors.js";
import type { GlobalOptions } from "../global-options.js";
import { output, proto } from "../output.js";
import { printErr, printOut } from "../render/terminal-safe.js";
import { styleFor } from "../render/style.js";
import { ago, table } from "../render/text.js";
import { widthOf } from "../render/columns.js";

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("ls")
    .description("list sessions, most recently active first")
    .option("-a, --all", "include archived sessions")
    .option("-n, --limit <n>", "show at most N sessions, most recently active first (0: all)", "50")
    .option("--json", "print the ListSessions response as one JSON object (every session unless -n is given)")
    .addHelpText(
      "after",
      `
Examples:
  boxmaker ls
  boxmaker ls -n 0 --all
  boxmaker ls --json | jq -r '.sessions[] | select(.state == "running") | .id'`,
    )
    .action(async (opts: { all?: boolean; json?: boolean; limit: string }, cmd: Command) => {
      const n = Number(opts.limit);
      if (!Number.isInteger(n) || n < 0) throw new UsageError(`--limit needs a whole number >= 0, not "${opts.limit}"`);
      // Scripts reading --json get every session unless they asked for fewer.
      const limit = opts.json && cmd.getOptionValueSource("limit") === "default" ? 0 : n;
      const { ListSessionsResponseSchema, SessionRole } = await import("@boxmaker/common/client");
      const res = await withClient(globals(), (client) => client.listSessions({ includeArchived: !!opts.all, limit }));
      res.sessions.sort((a, b) => Number(b.updatedUnixMs - a.updatedUnixMs));
      await output(opts, {
        json: () => proto(ListSessionsResponseSchema, res),
        text: async () => {
          if (res.sessions.length === 0) {
            printErr("no sessions yet; start one with `boxmaker chat` or `boxmaker run`\n");
            return;
          }
          const s = styleFor(process.stdout);
          const state = (st: string) =>
            st === "running" ? s.green(st) : st === "interrupted" ? s.yellow(st) : st === "archived" ? s.dim(st) : st;
          const rows = [
            ["ID", "STATE", "ROLE", "MSGS", "CONTEXT", "ACTIVE", "TITLE"].map((h) => s.bold(h)),
            ...res.sessions.map((x) => [
              x.id,
              state(x.state),
              (SessionRole[x.role] ?? "").toLowerCase(),
              String(x.messages),
              String(x.contextTokens),
              ago(x.updatedUnixMs),
              x.title || s.dim("(untitled)"),
            ]),
          ];
          // On a narrow terminal the counts go first, then the role and the time; the title is cut last.
          const width = widthOf(process.stdout);
          printOut(`${table(rows, { width, drop: [4, 3, 2, 5], cutFlex: true })}\n`);
          if (res.total > res.sessions.length) {
            // On stderr, after the table: `boxmaker ls | grep …` reads only the table.
            printErr(s.dim(`${res.sessions.length} of ${res.total} sessions shown; boxmaker ls -n 0 lists them all\n`));
          }
          return undefined;
        },
      });
    });
}
