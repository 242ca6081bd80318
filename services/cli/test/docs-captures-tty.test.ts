import { describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Tmux } from "./support/tmux.js";
import { useChatTty } from "./support/chat-tty.js";
import { columns } from "../src/render/columns.js";
import { requires } from "../../../test/support/requirements.js";

/**
 * The screen captures in docs/cli.md ("What a turn looks like at 40 and 200
 * columns") are what `chat` shows on a real terminal: a tool call, an
 * approval answered in place and a Markdown answer, at each width. This
 * runs them and compares, ids and timings aside; with
 * BOXMAKER_UPDATE_CAPTURES=1 it writes them into the doc instead.
 */
const DOC = join(import.meta.dirname, "../../../docs/cli.md");

/** What differs between two runs of the same turn: ids, clock, token counts and speeds. */
function normalised(screen: string): string {
  return screen
    .replace(/\b([sp])-[a-z0-9]{8}-[a-f0-9]{8}\b/g, "$1-…")
    .replace(/\d[\d,]*(\.\d+)? (s|ms|tokens|prompt tokens|generated|tok\/s)\b/g, "N $2")
    .replace(/\(\d+% cached\)/g, "(N% cached)")
    .replace(/reuse [\d.]+×/g, "reuse N×")
    .replace(/\d+ requests?/g, "N requests")
    .replace(/[ \t]+$/gm, "");
}

function captureBlock(doc: string, width: number): { start: number; end: number; text: string } {
  const open = `<!-- capture: chat at ${width} columns -->\n\`\`\`\n`;
  const start = doc.indexOf(open);
  if (start < 0) throw new Error(`docs/cli.md has no capture for ${width} columns`);
  const from = start + open.length;
  const end = doc.indexOf("```", from);
  return { start: from, end, text: doc.slice(from, end) };
}

describe.skipIf(!requires("boxmaker chat on a terminal (pty tests)", ["tmux"]))(
  "docs/cli.md's screen captures of chat",
  () => {
    const c = useChatTty("bxdc-");
    const t = c.t;

    async function chatAt(width: number): Promise<string> {
      t.stack.sim.enqueue({
        reasoning: "The person wants a config file. I will write it; it needs approval.",
        toolCalls: [
          {
            id: "call-cap",
            name: "write_file",
            arguments: JSON.stringify({
              path: `config-${width}.toml`,
              content: '[server]\nport = 8080\nhost = "127.0.0.1"\n',
            }),
          },
        ],
      });
      t.stack.sim.enqueue({
        content: [
          "## Done",
          "",
          `I wrote **config-${width}.toml** with the server's \`port\` and \`host\`:`,
          "",
          "| key | value | why |",
          "|-----|------:|-----|",
          "| port | 8080 | the port the README names |",
          '| host | "127.0.0.1" | local only, until you open it up |',
          "",
          `- run \`./serve --config config-${width}.toml\` to try it`,
        ].join("\n"),
      });
      const tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()), { columns: width, rows: 60 });
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.command("clear-history", "-t", chat);
      await tmux.command("send-keys", "-t", chat, "C-l");
      await tmux.type(chat, "write a config for the server");
      await tmux.waitFor(chat, (s) => s.includes("[l]ater"), "the approval question", 30_000);
      await tmux.keys(chat, "y");
      const done = await tmux.waitFor(chat, (s) => /— stop · 2 requests/.test(s), "the turn to end", 30_000);
      const lines = done.split("\n");
      for (const l of lines) expect(columns(l), l).toBeLessThanOrEqual(width);
      const from = lines.findIndex((l) => l.includes("write a config for the server"));
      const to = lines.findIndex((l) => l.startsWith("— stop"));
      // The summary wraps onto lines of its own at 40 columns, each indented.
      let last = to;
      while (lines[last + 1]?.startsWith("  ")) last++;
      return normalised(lines.slice(from, last + 1).join("\n"));
    }

    for (const width of [40, 200]) {
      it(`at ${width} columns: a tool call, an approval answered in place and a Markdown answer, as the doc shows`, async () => {
        const screen = await chatAt(width);
        expect(screen).toContain("approve? [y]es");
        expect(screen).toContain("Done");
        expect(screen).not.toContain(`**config-${width}.toml**`);
        const doc = readFileSync(DOC, "utf8");
        const block = captureBlock(doc, width);
        if (process.env.BOXMAKER_UPDATE_CAPTURES === "1") {
          writeFileSync(DOC, doc.slice(0, block.start) + `${screen}\n` + doc.slice(block.end));
          return;
        }
        expect(screen).toBe(block.text.replace(/\n$/, ""));
      });
    }
  },
);
