/**
 * Everything the CLI prints passes through here, because most of what it
 * prints was written by someone else: the model (answers, reasoning, tool
 * arguments, a subagent's task that became a session title), a tool (file
 * contents, command output), an MCP server (tool names, descriptions) or a
 * daemon (error messages). Any of them can hold bytes a terminal obeys
 * instead of showing: an OSC 52 clipboard write, a screen clear, an OSC 8
 * link, a window title, a `\r` or `ESC[2K` that overwrites the line a person
 * is about to approve, a bidi override that reorders it.
 *
 * So no raw control character reaches the terminal from data. The CLI's own
 * colours are not raw escapes either while text is being put together: a
 * Style (style.ts) marks them with styleMark(), a random string made at start
 * that data cannot contain. `terminalText` first makes every control
 * character visible — wherever it came from — and only then turns the
 * marks into escapes. A renderer that forgets to escape a field is therefore
 * still safe: the guard sits at the write, not at each field.
 *
 * Shown forms (docs/cli.md): C0 controls and DEL as their Unicode control
 * pictures (ESC is ␛, a lone CR ␍, BEL ␇, DEL ␡); C1 controls and bidi
 * overrides/isolates, which have no picture, as ⟨U+009B⟩, ⟨U+202E⟩. Newline
 * and tab stay as they are, and so does the CR of a CRLF.
 */

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this matches.
const UNSAFE = /\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

const shown = (c: string): string => {
  const n = c.charCodeAt(0);
  if (n < 0x20) return String.fromCharCode(0x2400 + n);
  if (n === 0x7f) return "\u2421";
  return `⟨U+${n.toString(16).toUpperCase().padStart(4, "0")}⟩`;
};

/** Text as a terminal should show it: every control character visible, everything printable unchanged. */
export function visible(text: string): string {
  return text.replace(UNSAFE, shown);
}

let mark: { text: string; styled: RegExp } | undefined;

/**
 * Stands for ESC in the CLI's own colour sequences until they are written:
 * private-use characters around a per-process random string, so data from a
 * daemon never contains it and cannot forge a colour. Made on first use, so a
 * command that prints no colour never asks for random bytes.
 */
export function styleMark(): string {
  if (!mark) {
    const words = [...globalThis.crypto.getRandomValues(new Uint32Array(3))];
    const text = `\uE000${words.map((w) => w.toString(36)).join("")}\uE001`;
    mark = { text, styled: new RegExp(`${text}\\[[0-9;]*m`, "g") };
  }
  return mark.text;
}

/** The bytes to write for text the CLI composed: data made visible, the CLI's own colours real. */
export function terminalText(text: string): string {
  const safe = visible(text);
  return mark ? safe.replaceAll(mark.text, "\x1b") : safe;
}

/** Columns the text takes once written (the CLI's colours take none; a shown control takes its shown form). */
export function visibleLength(text: string): number {
  return visible(mark ? text.replace(mark.styled, "") : text).length;
}

/** Writes CLI-composed text to a terminal, a pipe or a file: the one way text leaves the CLI. */
export function writeText(stream: NodeJS.WritableStream, text: string): void {
  if (text) stream.write(terminalText(text));
}

/** The CLI's own bell (an approval waits): the one control character written raw, and never taken from data. */
export function ringBell(stream: NodeJS.WritableStream): void {
  stream.write("\x07");
}

/** The CLI's own carriage return and erase-line, for a line it redraws in place; never taken from data. */
export function eraseLine(stream: NodeJS.WritableStream): void {
  stream.write("\r\x1b[2K");
}

/**
 * Erases the `rows` rows ending at the cursor's (a line the CLI drew and
 * wrapped itself, to be redrawn), leaving the cursor at the first one's start.
 */
export function eraseRows(stream: NodeJS.WritableStream, rows: number): void {
  stream.write(`\r\x1b[2K${"\x1b[1A\x1b[2K".repeat(Math.max(0, rows - 1))}`);
}

export const printOut = (text: string): void => writeText(process.stdout, text);
export const printErr = (text: string): void => writeText(process.stderr, text);

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this matches.
const JSON_UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

/**
 * JSON text with nothing a terminal obeys: JSON.stringify escapes C0 but
 * leaves DEL, C1 and bidi controls raw, so those become \u escapes too —
 * the same JSON value, decoded, so scripts see exactly what the daemon sent.
 */
export function jsonText(json: string): string {
  return json.replace(JSON_UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Writes one JSON document (a line of --json output, a jsonl export). */
export function writeJson(stream: NodeJS.WritableStream, json: string): void {
  stream.write(jsonText(json));
}
