import type { Command } from "commander";
import { sessionOption } from "../completion/value-kinds.js";
import { withClient } from "../connection.js";
import type { GlobalOptions } from "../global-options.js";
import { output, proto } from "../output.js";
import { printErr } from "../render/terminal-safe.js";
import { styleFor } from "../render/style.js";
import { ago, table } from "../render/text.js";

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("proposals")
    .description("list staged writes and commands waiting for a person")
    .option("-a, --all", "include decided proposals")
    .addOption(sessionOption("-s, --session <id>", "only this session's"))
    .option("--json", "print the ListProposals response as one JSON object")
    .addHelpText(
      "after",
      `
Each row: id, session, tool, a one-line preview (the file or the command),
and how long it has waited. Decide with \`boxmaker approve ID\` or
\`boxmaker reject ID\`; \`run\` and \`chat\` on a terminal also ask in place.

Examples:
  boxmaker proposals
  boxmaker proposals --json | jq -r '.proposals[].id'`,
    )
    .action(async (opts: { all?: boolean; session?: string; json?: boolean }) => {
      const res = await withClient(globals(), (client) =>
        client.listProposals({ includeDecided: !!opts.all, sessionId: opts.session ?? "" }),
      );
      res.proposals.sort((a, b) => Number(a.createdUnixMs - b.createdUnixMs));
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).ListProposalsResponseSchema, res),
        text: async () => {
          if (!res.proposals.length) {
            printErr(opts.all ? "no proposals\n" : "nothing waits for a decision\n");
            return;
          }
          const { stateText } = await import("../render/proposal.js");
          const s = styleFor(process.stdout);
          const rows = [
            ["ID", "SESSION", "TOOL", ...(opts.all ? ["STATE"] : []), "AGE", "PREVIEW"].map((h) => s.bold(h)),
            ...res.proposals.map((p) => [
              p.id,
              p.sessionId,
              p.tool,
              ...(opts.all ? [stateText(p.state, s)] : []),
              ago(p.createdUnixMs),
              oneLinePreview(p.tool, p.preview, p.argumentsJson),
            ]),
          ];
          // Narrow: the session and age give way first; the preview is cut.
          const { widthOf } = await import("../render/columns.js");
          const drop = opts.all ? [1, 4] : [1, 3];
          return `${table(rows, { width: widthOf(process.stdout), drop, cutFlex: true })}\n`;
        },
      });
    });
}

/** The file a diff touches (with its size of change), or the command; at most 70 characters. */
export function oneLinePreview(tool: string, preview: string, argumentsJson: string): string {
  const lines = preview.split("\n");
  const target = lines
    .find((l) => l.startsWith("+++ "))
    ?.slice(4)
    .replace(/^b\//, "");
  let text: string;
  if (target) {
    const added = lines.filter((l) => l.startsWith("+") && !l.startsWith("+++")).length;
    const removed = lines.filter((l) => l.startsWith("-") && !l.startsWith("---")).length;
    text = `${target} (+${added} -${removed})`;
  } else {
    text = lines.find((l) => l.trim())?.trim() || argumentsJson || tool;
  }
  text = text.replace(/\s+/g, " ");
  return text.length > 70 ? `${text.slice(0, 69)}…` : text;
}
