import type { LoopClient } from "./connection.js";
import { modeSlash, type ChatMode } from "./commands/mode.js";
import type { Style } from "./render/style.js";
import { printErr } from "./render/terminal-safe.js";
import { commandLines, loadCustomCommands, customCommandPrompt } from "./commands/commands.js";
import { oneLinePreview } from "./commands/proposals.js";
import { ago } from "./render/text.js";
import { compactedText } from "./commands/compact.js";
import { builtinHelp, builtinNamed, type BuiltinName } from "./slash-builtins.js";

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

type SlashHandler = (ctx: SlashContext, line: string) => Promise<SlashOutcome>;

const done: SlashOutcome = { kind: "done" };
const out = (t: string) => void printErr(t.endsWith("\n") ? t : `${t}\n`);

/**
 * What each of chat's own commands does (their names and /help lines are in
 * slash-builtins.ts). Handlers load what they use when they run, so the table
 * costs every start nothing.
 */
const RUN: Record<BuiltinName, SlashHandler> = {
  help: async ({ client, style }) => {
    out(builtinHelp());
    const custom = await loadCustomCommands(client);
    // commandLines is also what `boxmaker commands` prints: both say the same of each command.
    if (custom.commands.length)
      out(
        `custom commands (their prompt is sent; see \`boxmaker commands\`):\n${commandLines(custom, style).join("\n")}`,
      );
    return done;
  },
  status: async ({ client, style }) => {
    const { renderStatus } = await import("./render/status.js");
    const { widthOf } = await import("./render/columns.js");
    out(renderStatus(await client.status({}), style, widthOf(process.stdout)));
    return done;
  },
  tools: async ({ client, style }) => {
    const { renderTools } = await import("./render/tools.js");
    out(renderTools(await client.searchTools({ query: "", limit: 10 }), "", false, style));
    return done;
  },
  proposals: async ({ client, sessionId, style: s, note }) => {
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
  compact: async ({ client, sessionId, note }) => {
    if (!sessionId) return said(note, "nothing to compact yet");
    return said(note, compactedText(sessionId, (await client.compactSession({ sessionId })).compacted).trimEnd());
  },
  cancel: async ({ client, sessionId, note }) => {
    if (!sessionId) return said(note, "no session yet");
    const { cancelled } = await client.cancelTurn({ sessionId });
    return said(note, cancelled ? `cancelled the running turn of ${sessionId}` : "no turn is running");
  },
  edit: async ({ note }, line) => {
    const { editPrompt, EditorError } = await import("./editor-prompt.js");
    try {
      const text = await editPrompt(line.trim().replace(/^\/\S+\s*/, ""));
      return text === undefined ? said(note, "the message was empty: nothing was sent") : { kind: "send", text };
    } catch (err) {
      if (err instanceof EditorError) return said(note, err.message);
      throw err;
    }
  },
  mode: async (ctx, line) => said(ctx.note, await modeSlash(line, ctx)),
  exit: async () => ({ kind: "quit" }),
};

function said(note: (t: string) => void, text: string): SlashOutcome {
  note(text);
  return done;
}

/**
 * A chat line starting with "/": chat's own command, else a custom command's
 * prompt to send, else unknown (the caller says so; nothing is sent).
 */
export async function runSlashCommand(line: string, ctx: SlashContext): Promise<SlashOutcome> {
  const word = (line.trim().split(/\s+/)[0] ?? "").slice(1);
  const builtin = builtinNamed(word);
  if (builtin) return RUN[builtin](ctx, line);
  const text = await customCommandPrompt(ctx.client, line);
  return text === undefined ? { kind: "unknown" } : { kind: "send", text };
}
