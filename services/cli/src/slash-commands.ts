import type { LoopClient } from "./connection.js";
import { modeSlash, type ChatMode } from "./commands/mode.js";
import type { Style } from "./render/style.js";
import { printErr } from "./render/terminal-safe.js";
import { commandLines, loadCustomCommands, customCommandPrompt } from "./commands/commands.js";
import { oneLinePreview } from "./commands/proposals.js";
import { ago } from "./render/text.js";
import { compactedText } from "./commands/compact.js";

/** What a slash command in chat has to work with. */
export interface SlashContext {
  client: LoopClient;
  sessionId: string | undefined;
  style: Style;
  /** A dimmed line on stderr: what the chat says about itself, as opposed to output asked for. */
  note: (t: string) => void;
  mode?: ChatMode;
}

/** What chat does after a slash line: go on, end, send a prompt as the message, or say there is no such command. */
export type SlashOutcome = { kind: "done" } | { kind: "quit" } | { kind: "send"; text: string } | { kind: "unknown" };

interface SlashCommand {
  /** Typed after the slash. */
  name: string;
  /** Other words for it, not listed by /help. */
  aliases?: readonly string[];
  /** How its arguments are written in /help, e.g. "[M]". */
  args?: string;
  summary: string;
  /** line is the whole line as typed. */
  run: (ctx: SlashContext, line: string) => Promise<SlashOutcome>;
}

const done: SlashOutcome = { kind: "done" };
const out = (t: string) => void printErr(t.endsWith("\n") ? t : `${t}\n`);

/**
 * Chat's own commands, each declared once: /help, chat's --help, the names a
 * custom command may not take and the dispatch all read this list. Handlers
 * load what they use when they run, so the list costs every start nothing.
 */
const BUILTINS: readonly SlashCommand[] = [
  {
    name: "help",
    aliases: ["?"],
    summary: "this list",
    run: async ({ client, style }) => {
      out(builtinHelp());
      const custom = await loadCustomCommands(client);
      // commandLines is also what `boxmaker commands` prints: both say the same of each command.
      if (custom.commands.length)
        out(
          `custom commands (their prompt is sent; see \`boxmaker commands\`):\n${commandLines(custom, style).join("\n")}`,
        );
      return done;
    },
  },
  {
    name: "status",
    summary: "the stack's health, slots and pending proposals",
    run: async ({ client, style }) => {
      const { renderStatus } = await import("./render/status.js");
      const { widthOf } = await import("./render/columns.js");
      out(renderStatus(await client.status({}), style, widthOf(process.stdout)));
      return done;
    },
  },
  {
    name: "tools",
    summary: "the tools the model always has",
    run: async ({ client, style }) => {
      const { renderTools } = await import("./render/tools.js");
      out(renderTools(await client.searchTools({ query: "", limit: 10 }), "", false, style));
      return done;
    },
  },
  {
    name: "proposals",
    summary: "what waits for a decision in this session",
    run: async ({ client, sessionId, style: s, note }) => {
      if (!sessionId) return said(note, "no session yet");
      const { proposals } = await client.listProposals({ sessionId, includeDecided: false });
      if (!proposals.length) return said(note, "nothing waits for a decision in this session");
      for (const p of proposals) {
        out(
          `${s.bold(p.id)}  ${p.tool}  ${oneLinePreview(p.tool, p.preview, p.argumentsJson)}  ${s.dim(ago(p.createdUnixMs))}`,
        );
      }
      return said(note, "decide with `boxmaker approve ID` / `boxmaker reject ID`");
    },
  },
  {
    name: "compact",
    summary: "fold older turns into a summary now (a new epoch)",
    run: async ({ client, sessionId, note }) => {
      if (!sessionId) return said(note, "nothing to compact yet");
      return said(note, compactedText(sessionId, (await client.compactSession({ sessionId })).compacted).trimEnd());
    },
  },
  {
    name: "cancel",
    summary: "cancel this session's running turn (e.g. one started elsewhere)",
    run: async ({ client, sessionId, note }) => {
      if (!sessionId) return said(note, "no session yet");
      const { cancelled } = await client.cancelTurn({ sessionId });
      return said(note, cancelled ? `cancelled the running turn of ${sessionId}` : "no turn is running");
    },
  },
  {
    name: "mode",
    args: "[M]",
    summary: "show or set the permission mode: read-only, ask, auto-edit, auto",
    run: async (ctx, line) => said(ctx.note, await modeSlash(line, ctx)),
  },
  {
    name: "exit",
    aliases: ["quit"],
    summary: "quit (also Ctrl-D)",
    run: async () => ({ kind: "quit" }),
  },
];

function said(note: (t: string) => void, text: string): SlashOutcome {
  note(text);
  return done;
}

const usage = (c: SlashCommand) => `/${c.name}${c.args ? ` ${c.args}` : ""}`;

const find = (word: string) => BUILTINS.find((c) => c.name === word || c.aliases?.includes(word));

/** A line that is only /exit (or /quit): the prompt ends at it, and it is not kept in the history. */
export function endsChat(line: string): boolean {
  const t = line.trim();
  return t.startsWith("/") && find(t.slice(1))?.name === "exit";
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

/**
 * A chat line starting with "/": chat's own command, else a custom command's
 * prompt to send, else unknown (the caller says so; nothing is sent).
 */
export async function runSlashCommand(line: string, ctx: SlashContext): Promise<SlashOutcome> {
  const word = (line.trim().split(/\s+/)[0] ?? "").slice(1);
  const builtin = find(word);
  if (builtin) return builtin.run(ctx, line);
  const text = await customCommandPrompt(ctx.client, line);
  return text === undefined ? { kind: "unknown" } : { kind: "send", text };
}
