import type { Command } from "commander";
import { sessionArgument } from "../completion/value-kinds.js";
import { withClient } from "../connection.js";
import type { GlobalOptions } from "../global-options.js";
import { output } from "../output.js";
import { printPaged } from "../pager.js";
import { markdownWanted, styleFor } from "../render/style.js";
import { ago } from "../render/text.js";
import { cut, widthOf, wrapWords } from "../render/columns.js";

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("show")
    .description("print a session's history: messages, reasoning (dimmed) and framed tool calls")
    .addArgument(sessionArgument("<id>", "session id (see `boxmaker ls`)"))
    .option("--no-reasoning", "collapse reasoning to a one-line note")
    .option("--result-lines <n>", "lines of each tool result to show", "4")
    .option("--json", "print the session and its messages as one JSON object")
    .addHelpText(
      "after",
      `
Examples:
  boxmaker show s-mx4f7p33-e9e25c52 | less -R
  boxmaker show --json s-mx4f7p33-e9e25c52 | jq '.messages[].message.role'`,
    )
    .action(async (id: string, opts: { reasoning: boolean; resultLines: string; json?: boolean }) => {
      const { SessionInfoSchema } = await import("@boxmaker/common/client");
      const g = globals();
      const res = await withClient(g, (client) => client.getSession({ id }));
      await output(opts, {
        json: (jsonOf) => {
          // message_json is itself JSON: embed it parsed so one jq path reaches into it.
          const messages = res.messages.map(
            (m) =>
              `{"epoch":${m.epoch},"at_unix_ms":"${m.atUnixMs}",${m.interrupted ? '"interrupted":true,' : ""}"message":${m.messageJson}}`,
          );
          const session = res.session ? jsonOf(SessionInfoSchema, res.session) : "null";
          const plan = JSON.stringify(res.plan.map((i) => ({ content: i.content, status: i.status })));
          return { document: `{"session":${session},"plan":${plan},"messages":[${messages.join(",")}]}` };
        },
        text: async () => {
          const { renderHistory } = await import("../render/history.js");
          const { reuseText } = await import("../render/template-probe.js");
          const s = styleFor(process.stdout);
          const info = res.session;
          let text = "";
          if (info) {
            const width = widthOf(process.stdout);
            // Each fact line wraps at its words on a narrow terminal; the title is cut.
            const facts = (line: string, colour: (t: string) => string) =>
              wrapWords(line, width, "", "  ").map((l) => `${colour(l)}\n`);
            const title = info.title || "(untitled)";
            text += [
              `${s.bold(width === undefined ? title : cut(title, width))}\n`,
              ...facts(
                `${info.id} · ${info.state} · slot ${info.slot} · ${info.messages} messages · ${info.contextTokens} context tokens · active ${ago(info.updatedUnixMs)}`,
                s.dim,
              ),
              ...facts(`mode: ${info.mode || "ask"} · project instructions: ${info.instructionsFile || "none"}`, s.dim),
              ...facts(`cache reuse: ${reuseText(info.cacheHealth)}`, s.dim),
              ...(info.cacheHealth?.warning ? facts(`warning: ${info.cacheHealth.warning}`, s.yellow) : []),
              "\n",
            ].join("");
          }
          if (res.plan.length) {
            const { planLines } = await import("../render/plan.js");
            text += `${planLines(res.plan, s).join("\n")}\n\n`;
          }
          text += renderHistory(res.messages, {
            style: s,
            reasoning: opts.reasoning,
            resultLines: Math.max(0, Number(opts.resultLines) || 0),
            width: widthOf(process.stdout),
            markdown: markdownWanted(process.stdout),
          });
          // A long history on a terminal opens in the pager, as a whole: its height is known only once it is all made.
          await printPaged(text, g.pager);
          return undefined;
        },
      });
    });
}
