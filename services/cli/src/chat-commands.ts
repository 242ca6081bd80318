import type { LoopClient } from "./connection.js";
import type { Style } from "./render/style.js";
import { printErr } from "./render/terminal-safe.js";

const SLASH_HELP = `commands:
  /help        this list
  /status      the stack's health, slots and pending proposals
  /tools       the tools the model always has
  /proposals   what waits for a decision in this session
  /compact     fold older turns into a summary now (a new epoch)
  /cancel      cancel this session's running turn (e.g. one started elsewhere)
  /mode [M]    show or set the permission mode: read-only, ask, auto-edit, auto
  /exit        quit (also Ctrl-D)
a message may span lines: paste it, or put it between two lines holding only """`;

/**
 * A chat line starting with "/": handled here, never sent to the model.
 * Returns false for an unknown command (the caller says so; nothing is sent).
 */
export async function runSlashCommand(
  line: string,
  ctx: {
    client: LoopClient;
    sessionId: string | undefined;
    style: Style;
    note: (t: string) => void;
    mode?: import("./commands/mode.js").ChatMode;
  },
): Promise<boolean> {
  const { client, sessionId, style: s, note } = ctx;
  const [cmd] = line.trim().split(/\s+/);
  const out = (t: string) => void printErr(t.endsWith("\n") ? t : `${t}\n`);
  switch (cmd) {
    case "/help":
    case "/?": {
      out(SLASH_HELP);
      const { commandLines, loadCustomCommands } = await import("./commands/commands.js");
      const custom = await loadCustomCommands(client);
      if (custom.commands.length)
        out(
          `custom commands (their prompt is sent; see \`boxmaker commands\`):\n${commandLines(custom, s).join("\n")}`,
        );
      return true;
    }
    case "/compact": {
      if (!sessionId) {
        note("nothing to compact yet");
        return true;
      }
      const { compactedText } = await import("./commands/compact.js");
      note(compactedText(sessionId, (await client.compactSession({ sessionId })).compacted).trimEnd());
      return true;
    }
    case "/cancel": {
      if (!sessionId) {
        note("no session yet");
        return true;
      }
      const { cancelled } = await client.cancelTurn({ sessionId });
      note(cancelled ? `cancelled the running turn of ${sessionId}` : "no turn is running");
      return true;
    }
    case "/mode": {
      const { modeSlash } = await import("./commands/mode.js");
      note(await modeSlash(line, ctx));
      return true;
    }
    case "/tools": {
      const { renderTools } = await import("./render/tools.js");
      out(renderTools(await client.searchTools({ query: "", limit: 10 }), "", false, s));
      return true;
    }
    case "/status": {
      const { renderStatus } = await import("./render/status.js");
      out(renderStatus(await client.status({}), s));
      return true;
    }
    case "/proposals": {
      if (!sessionId) {
        note("no session yet");
        return true;
      }
      const { proposals } = await client.listProposals({ sessionId, includeDecided: false });
      if (!proposals.length) {
        note("nothing waits for a decision in this session");
        return true;
      }
      const { oneLinePreview } = await import("./commands/proposals.js");
      const { ago } = await import("./render/text.js");
      for (const p of proposals) {
        out(
          `${s.bold(p.id)}  ${p.tool}  ${oneLinePreview(p.tool, p.preview, p.argumentsJson)}  ${s.dim(ago(p.createdUnixMs))}`,
        );
      }
      note("decide with `boxmaker approve ID` / `boxmaker reject ID`");
      return true;
    }
    default:
      return false;
  }
}
