import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Tmux } from "./support/tmux.js";
import { useChatTty } from "./support/chat-tty.js";
import { until } from "./support/cli-process.js";
import { columns } from "../src/render/columns.js";
import { requires } from "../../../test/support/requirements.js";

/**
 * #32: the model's answer rendered as Markdown on a terminal, through a real
 * pseudo-terminal (tmux) against the whole stack and the llama simulator;
 * the model's text byte for byte when piped or with NO_COLOR.
 */
describe.skipIf(!requires("boxmaker run on a terminal (pty tests)", ["tmux"]))(
  "boxmaker run on a terminal: the answer as Markdown",
  () => {
    const c = useChatTty("bxmd-");
    const t = c.t;
    const answer = [
      "# Release notes",
      "",
      "The **parser** now keeps `snake_case_names` and *emphasis* apart, see [the docs](https://example.org/docs).",
      "",
      "- first point, long enough that a narrow terminal has to wrap it at a word",
      "  - nested point",
      "- [x] a finished task",
      "",
      "| Name | Size | Notes |",
      "|:-----|-----:|:------|",
      "| alpha | 12 | the first row, with a note long enough to wrap in its column |",
      "| beta | 3 | `a|b` |",
      "",
      "```python",
      "def main(argv):",
      "    if argv:  # two  spaces kept",
      '\treturn "tab"',
      "```",
      "",
      "> a quoted line",
      "That is all.",
    ].join("\n");
    // One delta per few characters, as a model streams: lines arrive in pieces.
    const deltas = answer.match(/[\s\S]{1,3}/g)!;

    async function runIn(size: { columns: number; rows: number }, env: Record<string, string | undefined> = c.env()) {
      t.stack.sim.enqueue({ content: deltas, tokenDelayMs: 2 });
      const tmux = c.newTmux();
      const pane = await tmux.start(Tmux.cliLine(["run", "notes please"], env), size);
      const bytes = join(t.dir, `md-${size.columns}.bytes`);
      await tmux.command("pipe-pane", "-t", pane, `cat >> '${bytes}'`);
      const screen = await tmux.waitFor(pane, (s) => s.includes("[exit 0]"), "run to end", 30_000);
      return { tmux, pane, screen, bytes };
    }

    it("renders headings, emphasis, lists, tables and code to a 40-column terminal, each line inside it", async () => {
      const { screen } = await runIn({ columns: 40, rows: 60 });
      const lines = screen.split("\n");
      // -J joins rows the terminal wrapped: every line at most 40 columns means nothing wrapped mid-word.
      for (const l of lines) expect(columns(l), l).toBeLessThanOrEqual(40);
      expect(lines).toContain("Release notes");
      expect(screen).not.toContain("# Release");
      expect(screen).not.toContain("**");
      expect(screen).toContain("snake_case_names");
      // A link shows where it points; the address wraps as a word of its own.
      expect(lines).toContain("and emphasis apart, see the docs");
      expect(lines).toContain("(https://example.org/docs).");
      expect(lines).toContain("• first point, long enough that a narrow");
      expect(lines).toContain("  terminal has to wrap it at a word");
      expect(lines).toContain("  • nested point");
      expect(lines).toContain("☑ a finished task");
      // The table: a header, a rule, and the long note wrapped inside its own column.
      const head = lines.findIndex((l) => /^Name\s+│ Size │ Notes/.test(l));
      expect(head).toBeGreaterThan(0);
      expect(lines[head + 1]).toMatch(/^─+┼─+┼─+$/);
      expect(lines[head + 2]).toMatch(/^alpha\s+│\s+12 │ the first row/);
      expect(lines[head + 3]).toMatch(/^\s+│\s+│ \S/);
      expect(screen).toMatch(/beta\s+│\s+3 │ a\|b/);
      // Code as written: indentation, two spaces, a tab to the next stop; no fence left.
      expect(lines).toContain("def main(argv):");
      expect(lines).toContain("    if argv:  # two  spaces kept");
      expect(lines).toContain('    return "tab"');
      expect(screen).not.toContain("```");
      expect(lines).toContain("│ a quoted line");
      expect(lines).toContain("That is all.");
    });

    it("streams the line being written and redraws it in place, leaving each line once; colour marks what Markdown marked", async () => {
      const { tmux, pane, bytes } = await runIn({ columns: 200, rows: 60 });
      await until(() => readFileSync(bytes, "utf8").includes("[exit 0]"), "the pane's bytes");
      const raw = readFileSync(bytes, "utf8");
      // Bold, italic, code, underline for the link, and the keyword's colour in the code block.
      expect(raw).toContain("\x1b[1mparser\x1b[22m");
      expect(raw).toContain("\x1b[3memphasis\x1b[23m");
      expect(raw).toContain("\x1b[36msnake_case_names\x1b[39m");
      expect(raw).toContain("\x1b[4mthe docs\x1b[24m");
      expect(raw).toContain("\x1b[35mdef\x1b[39m main");
      const screen = await tmux.screen(pane);
      // Each line of the answer once: no half-drawn copy of a line left above its final form.
      expect(screen.match(/The parser now keeps/g)).toHaveLength(1);
      expect(screen.match(/That is all\./g)).toHaveLength(1);
      // Part of a line reached the terminal before its end did: the person reads as the model writes.
      const partial = raw.indexOf("The ");
      expect(partial).toBeGreaterThanOrEqual(0);
      expect(raw.indexOf("apart, see")).toBeGreaterThan(partial);
      expect(raw.slice(partial, raw.indexOf("apart, see"))).toContain("\r\x1b[2K");
    });

    it("show renders a stored answer the same way on a terminal, and keeps its text when piped", async () => {
      const { screen } = await runIn({ columns: 60, rows: 60 });
      const id = /session (s-[\w-]+)/.exec(screen)![1]!;
      const tmux = c.newTmux();
      const pane = await tmux.start(Tmux.cliLine(["show", id], c.env()), { columns: 60, rows: 80 });
      const shown = await tmux.waitFor(pane, (s) => s.includes("[exit 0]"), "show to end");
      const lines = shown.split("\n");
      for (const l of lines) expect(columns(l), l).toBeLessThanOrEqual(60);
      expect(lines).toContain("  Release notes");
      expect(lines).toContain("      if argv:  # two  spaces kept");
      expect(shown).not.toContain("**parser**");
      const piped = await t.stack.cli(["show", id]);
      expect(piped.stdout).toContain("  The **parser** now keeps `snake_case_names`");
    });

    it("keeps the model's text byte for byte when piped, and on a terminal with NO_COLOR", async () => {
      t.stack.sim.enqueue({ content: deltas });
      const piped = await t.stack.cli(["run", "notes please"]);
      expect(piped.code).toBe(0);
      expect(piped.stdout).toContain(answer);

      const { screen } = await runIn({ columns: 120, rows: 60 }, { ...c.env(), NO_COLOR: "1" });
      expect(screen).toContain("# Release notes");
      expect(screen).toContain("The **parser** now keeps `snake_case_names`");
      expect(screen).toContain("```python");
    });

    it("makes control characters in the answer visible inside code, tables and links", async () => {
      t.stack.sim.enqueue({
        content: [
          "| a | b |\n|---|---|\n| \x1b]52;c;cHduZWQ=\x07 | x |\n",
          "```\n\x1b[2Jcleared\n```\n",
          "[\x1b[8mhid](u)\n",
        ],
      });
      const tmux = c.newTmux();
      const pane = await tmux.start(Tmux.cliLine(["run", "x"], c.env()), { columns: 80, rows: 30 });
      const screen = await tmux.waitFor(pane, (s) => s.includes("[exit 0]"), "run to end", 30_000);
      expect(screen).toContain("␛]52;c;cHduZWQ=␇");
      expect(screen).toContain("␛[2Jcleared");
      expect(screen).toContain("[␛8mhid (u)");
    });
  },
);
