/** One of chat's own commands as /help lists it; its handler is in slash-commands.ts. */
interface SlashBuiltin {
  /** Typed after the slash. */
  readonly name: string;
  /** Other words for it, not listed by /help. */
  readonly aliases?: readonly string[];
  /** How its arguments are written in /help, e.g. "[M]". */
  readonly args?: string;
  readonly summary: string;
}

/**
 * Chat's own commands, each declared once: /help, chat's --help, the names a
 * custom command may not take (custom-commands.ts) and the dispatch
 * (slash-commands.ts, one handler per name, checked by type) all read this
 * list. It imports nothing, so reading the names loads no handler.
 */
const SLASH_BUILTINS = [
  { name: "help", aliases: ["?"], summary: "this list" },
  { name: "status", summary: "the stack's health, slots and pending proposals" },
  { name: "tools", summary: "the tools the model always has" },
  { name: "proposals", summary: "what waits for a decision in this session" },
  { name: "compact", summary: "fold older turns into a summary now (a new epoch)" },
  { name: "cancel", summary: "cancel this session's running turn (e.g. one started elsewhere)" },
  { name: "edit", args: "[TEXT]", summary: "write the message in $VISUAL/$EDITOR, starting from TEXT (also Ctrl-G)" },
  { name: "mode", args: "[M]", summary: "show or set the permission mode: read-only, ask, auto-edit, auto" },
  { name: "exit", aliases: ["quit"], summary: "quit (also Ctrl-D)" },
] as const satisfies readonly SlashBuiltin[];

export type BuiltinName = (typeof SLASH_BUILTINS)[number]["name"];

const BUILTINS: readonly (SlashBuiltin & { readonly name: BuiltinName })[] = SLASH_BUILTINS;

const usage = (c: SlashBuiltin) => `/${c.name}${c.args ? ` ${c.args}` : ""}`;

/** The built-in a word after the slash names (by name or alias). */
export function builtinNamed(word: string): BuiltinName | undefined {
  return BUILTINS.find((c) => c.name === word || c.aliases?.includes(word))?.name;
}

/** A line that is only /exit (or /quit): the prompt ends at it, and it is not kept in the history. */
export function endsChat(line: string): boolean {
  const t = line.trim();
  return t.startsWith("/") && builtinNamed(t.slice(1)) === "exit";
}

/** Every word chat takes as its own command after a slash (names and aliases): a custom command of that name is not used. */
export const builtinSlashNames = (): string[] => BUILTINS.flatMap((c) => [c.name, ...(c.aliases ?? [])]);

/** The commands as chat's --help lists them: "/help /status …". */
export const builtinSlashList = (): string => BUILTINS.map((c) => `/${c.name}`).join(" ");

/** /help's list of chat's own commands, one a line, summaries in one column. */
export function builtinHelp(): string {
  const width = Math.max(...BUILTINS.map((c) => usage(c).length)) + 1;
  return [
    "commands:",
    ...BUILTINS.map((c) => `  ${usage(c).padEnd(width)}  ${c.summary}`),
    'a message may span lines: paste it, or put it between two lines holding only """',
  ].join("\n");
}
