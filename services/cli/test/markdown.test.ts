import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { MarkdownBlocks } from "../src/render/markdown/blocks.js";
import { CodeHighlighter } from "../src/render/markdown/code-highlight.js";
import { renderInline } from "../src/render/markdown/inline.js";
import { carryStyles } from "../src/render/markdown/style-runs.js";
import { colourWanted, markdownWanted, styleFor } from "../src/render/style.js";
import { columns, faithfulLine } from "../src/render/columns.js";
import { terminalText } from "../src/render/terminal-safe.js";

const tty = { isTTY: true } as NodeJS.WriteStream;
const pipe = { isTTY: false } as NodeJS.WriteStream;
const plain = styleFor(pipe, {});
const colour = styleFor(tty, { FORCE_COLOR: "1" });
// biome-ignore lint/suspicious/noControlCharactersInRegex: the colours' escapes are what this removes.
const unstyled = (text: string) => terminalText(text).replace(/\x1b\[[0-9;]*m/g, "");

function render(source: string, width: number | undefined, s = plain): string[] {
  const b = new MarkdownBlocks(s, width);
  return [...source.split("\n").flatMap((l) => b.line(l)), ...b.end()];
}

describe("Markdown inline marks", () => {
  it("turns marks into styles and leaves what is not a mark as written", () => {
    const r = (t: string) => unstyled(renderInline(t, colour));
    expect(r("**bold** and *it* and __b__ and _i_ and ~~gone~~")).toBe("bold and it and b and i and gone");
    expect(r("snake_case_name and my_var_ stays")).toBe("snake_case_name and my_var_ stays");
    expect(r("2 * 3 * 4 and a ** b")).toBe("2 * 3 * 4 and a ** b");
    expect(r("an **unclosed mark")).toBe("an **unclosed mark");
    expect(r("`a*b*c` and ``x ` y``")).toBe("a*b*c and x ` y");
    expect(r("\\*literal\\* and \\_x\\_")).toBe("*literal* and _x_");
    expect(r('[docs](https://e.org "title") and <https://e.org/a>')).toBe("docs (https://e.org) and https://e.org/a");
    expect(r("![a chart](c.png)")).toBe("[image: a chart] (c.png)");
    expect(r("[https://e.org](https://e.org)")).toBe("https://e.org");
  });

  it("drops only mark characters, never a word, for any text", () => {
    // A code span's padding space is dropped by the rule (CommonMark 6.1), so spaces are not compared.
    const marks = /[*_~` ]/g;
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom("a", " ", "_", "*", "~", "`", "x1", "é", "中", "snake_case") }),
        (t) => {
          expect(unstyled(renderInline(t, colour)).replace(marks, "")).toBe(t.replace(marks, ""));
        },
      ),
    );
  });
});

describe("Markdown blocks", () => {
  it("fits every line to the width, and loses no word of a table at any width", () => {
    const source = [
      "# A heading that is rather long for a narrow terminal",
      "- an item with enough words to wrap more than once at twenty columns",
      "| key | value | comment |",
      "|-----|:-----:|--------:|",
      "| alpha | one two three | a longer comment here |",
      "| beta | four | five six |",
    ].join("\n");
    for (const width of [12, 20, 40, 80, 200]) {
      const out = render(source, width);
      for (const l of out) expect(columns(l), `${width}: ${l}`).toBeLessThanOrEqual(width);
      const words = out.join(" ");
      for (const w of ["alpha", "one", "two", "three", "longer", "comment", "beta", "four", "five", "six"])
        expect(words, `${width}`).toContain(w);
    }
    // Too narrow for three columns: the rows as "header: value" lines.
    expect(render(source, 20)).toContain("key: alpha");
  });

  it("lays a table out with its alignment, and a table never closed at the end of the answer", () => {
    const out = render("| n | name |\n|--:|:-:|\n| 1 | a |\n| 100 | bbbbb |", 80);
    expect(out).toEqual(["  n │ name", "────┼──────", "  1 │   a", "100 │ bbbbb"]);
    // Rows without an alignment row are not a table: their text as written.
    expect(render("| just | pipes |", 80)).toEqual(["| just | pipes |"]);
  });

  it("shows code as written (indentation, repeated spaces, tabs to their stop) and closes the fence only with its own marker", () => {
    const out = render("~~~sh\n  echo  'a'\n```\n\tx\n~~~\nafter", 80);
    expect(out).toEqual(["sh", "  echo  'a'", "```", "    x", "after"]);
  });

  it("keeps indentation of a continuation line and renders quotes, rules and tasks", () => {
    expect(render("1. first\n   more of it\n> **q**\n---\n- [ ] todo", 40)).toEqual([
      "1. first",
      "   more of it",
      "│ q",
      "─".repeat(40),
      "☐ todo",
    ]);
  });

  it("previews a line being written without taking it, and nothing of a table row", () => {
    const b = new MarkdownBlocks(plain, 40);
    expect(b.preview("# Head")).toEqual(["Head"]);
    expect(b.preview("| a |")).toEqual([]);
    expect(b.line("# Head")).toEqual(["Head"]);
  });
});

describe("code highlighting", () => {
  it("colours without moving a character, for any line of any known language", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("ts", "python", "sh", "rust", "go", "c", "sql", "nix", "yaml", "unknown"),
        fc.array(
          fc.string({ unit: fc.constantFrom("if", " ", '"', "'", "`", "#", "//", "/*", "*/", "1", "x", "\\", "--") }),
        ),
        (lang, lines) => {
          const h = new CodeHighlighter(lang, colour);
          for (const l of lines) expect(unstyled(h.line(l))).toBe(l);
        },
      ),
    );
  });

  it("marks keywords, strings, comments and numbers", () => {
    const h = new CodeHighlighter("python", colour);
    const line = terminalText(h.line('def f(): return "s" # 42'));
    expect(line).toContain("\x1b[35mdef\x1b[39m");
    expect(line).toContain('\x1b[32m"s"\x1b[39m');
    expect(line).toContain("\x1b[2m# 42\x1b[22m");
    expect(faithfulLine("\tx")).toBe("    x");
  });
});

describe("styles across wrapped lines", () => {
  it("closes every style at a line's end and opens it again on the next", () => {
    const bold = colour.bold("b c");
    const cutAt = bold.indexOf(" ");
    const lines = carryStyles([`a ${bold.slice(0, cutAt)}`, bold.slice(cutAt + 1)]);
    const [first, second] = lines.map(terminalText);
    expect(first!.endsWith("\x1b[0m")).toBe(true);
    expect(second!.startsWith("\x1b[1m")).toBe(true);
  });
});

describe("colour and Markdown conventions", () => {
  it("follows NO_COLOR (empty is unset) and FORCE_COLOR (0 and false turn colour off)", () => {
    expect(colourWanted(tty, {})).toBe(true);
    expect(colourWanted(tty, { NO_COLOR: "1" })).toBe(false);
    expect(colourWanted(tty, { NO_COLOR: "" })).toBe(true);
    expect(colourWanted(tty, { TERM: "dumb" })).toBe(false);
    expect(colourWanted(pipe, {})).toBe(false);
    expect(colourWanted(pipe, { FORCE_COLOR: "1" })).toBe(true);
    expect(colourWanted(pipe, { FORCE_COLOR: "" })).toBe(true);
    expect(colourWanted(tty, { FORCE_COLOR: "0" })).toBe(false);
    expect(colourWanted(tty, { FORCE_COLOR: "false", NO_COLOR: "" })).toBe(false);
    expect(colourWanted(tty, { FORCE_COLOR: "2", NO_COLOR: "1" })).toBe(true);
    // Markdown needs a terminal: forced colour into a pipe still gets the model's text as written.
    expect(markdownWanted(pipe, { FORCE_COLOR: "1" })).toBe(false);
    expect(markdownWanted(tty, { NO_COLOR: "1" })).toBe(false);
    expect(markdownWanted(tty, {})).toBe(true);
  });
});
