import { messageOf, parseMode } from "@boxmaker/common/lite";
import { sessionArgument } from "../completion/value-kinds.js";
import type { Command } from "commander";
import { withClient } from "../connection.js";
import { addBudgetOptions, budgetsFrom, type BudgetFlags } from "../budget-options.js";
import { ExitCode } from "../exit-codes.js";
import { UsageError } from "../errors.js";
import type { GlobalOptions } from "../global-options.js";
import { reachPrefix } from "../socket-choice.js";
import { printOut, printErr } from "../render/terminal-safe.js";
import { builtinSlashList } from "../slash-builtins.js";
import { runSlashCommand, type SlashOutcome } from "../slash-commands.js";
import { MODE_CHOICES, modeFlag, modeOption, setMode, type ChatMode } from "./mode.js";
import { markdownWanted, styleFor } from "../render/style.js";
import { widthOf, wrapWords } from "../render/columns.js";

interface ChatFlags extends BudgetFlags {
  json?: boolean;
  reasoning?: boolean;
  history: string;
  mode?: string;
  continue?: boolean;
  resume?: boolean;
}

export function register(program: Command, globals: () => GlobalOptions): void {
  const cmd = program
    .command("chat")
    .description("talk to the agent turn by turn in one session; resume an existing session by id")
    .addArgument(sessionArgument("[id]", "session to resume (see `boxmaker ls`)"))
    .option("--json", "one JSON event per line on stdout (the prompt stays on stderr)")
    .option("--reasoning", "show the model's reasoning (dimmed) instead of a one-line summary")
    .option("--history <n>", "messages of an existing session to show when resuming", "6")
    .option("-c, --continue", "resume the most recent session (the last main session not archived)")
    .option("-r, --resume", "pick the session to resume from a list of recent ones (on a terminal)")
    .addOption(
      modeOption(`permission mode: ${MODE_CHOICES} (default: the resumed session's, else cli.json's mode, else ask)`),
    );
  addBudgetOptions(cmd)
    .addHelpText(
      "after",
      `
On a terminal you get a prompt: Enter sends, Ctrl-C cancels a running turn
(the session stays usable; a second Ctrl-C quits), Ctrl-T shows or hides
the reasoning while it streams, Ctrl-D or /exit quits. A status line under
the output says what the turn is doing (see docs/cli.md).
Pasted lines are one message; so is everything between two lines holding
only """; Ctrl-G (or /edit) writes the message in $VISUAL or $EDITOR,
starting from what is typed. Up/Down recall earlier messages, across runs
(~/.local/state/boxmaker/chat_history; BOXMAKER_CHAT_HISTORY= turns it off).
A staged write or command is asked about in place (y/n/d/l). Slash commands:
${builtinSlashList()}; /NAME ARGS
sends a custom command's prompt (\`boxmaker commands\` lists them).
The prompt line starts with the session's permission mode; /mode MODE
switches it mid-session (see \`boxmaker mode --help\`).
With stdin not a terminal, every non-empty line is one message and the exit
code is the last turn's.

Examples:
  boxmaker chat
  boxmaker chat s-mx4f7p33-e9e25c52
  boxmaker chat -c
  boxmaker chat -r
  boxmaker chat --mode auto-edit
  printf 'list files\\nnow count them\\n' | boxmaker chat --json`,
    )
    .action(async (id: string | undefined, opts: ChatFlags) => {
      const budgets = budgetsFrom(opts);
      const g = globals();
      // cli.json's mode is for new sessions: a resumed one keeps its own unless --mode says otherwise.
      if ([id !== undefined, opts.continue, opts.resume].filter(Boolean).length > 1)
        throw new UsageError("an id, --continue and --resume each name the session: give one");
      if (opts.resume && !(process.stdin.isTTY && process.stderr.isTTY))
        throw new UsageError("--resume needs a terminal to pick on; give the session's id or -c");
      const mode: ChatMode = {
        current:
          opts.mode !== undefined ? modeFlag(opts.mode) : id || opts.continue || opts.resume ? undefined : g.mode,
      };
      const { SessionRole } = await import("@boxmaker/common/client");
      const { sendAndRender } = await import("../turn-stream.js");
      const style = styleFor(process.stderr);
      // Chat's own lines wrap at their words on a narrow terminal, as every other line it writes.
      const note = (t: string) =>
        void printErr(
          wrapWords(t, widthOf(process.stderr))
            .map((l) => `${style.dim(l)}\n`)
            .join(""),
        );
      let sessionId = id;
      await withClient(g, async (client) => {
        if (opts.continue) id = await (await import("../last-session.js")).lastSessionId(client);
        if (opts.resume) {
          const { pickSession, recentSessions } = await import("../session-picker/pick-session.js");
          const rows = await recentSessions(client);
          if (rows.length === 0)
            throw new UsageError("no session to resume: `boxmaker chat` or `boxmaker run PROMPT` starts one");
          id = await pickSession(rows);
          if (id === undefined) {
            note("nothing resumed");
            return;
          }
        }
        if (id) {
          const r = await client.getSession({ id });
          // A prefix names the session; from here on it goes by its whole id.
          id = r.session?.id || id;
          sessionId = id;
          note(`resuming session ${id} (${r.session?.title || "untitled"}, ${r.messages.length} messages)`);
          if (mode.current) note(await setMode(client, id, mode.current));
          else mode.current = parseMode(r.session?.mode ?? "");
          if (!opts.json && Number(opts.history) > 0) {
            const { renderHistory } = await import("../render/history.js");
            printOut(
              renderHistory(r.messages.slice(-Number(opts.history)), {
                style: styleFor(process.stdout),
                reasoning: false,
                resultLines: 2,
                width: widthOf(process.stdout),
                markdown: markdownWanted(process.stdout),
              }),
            );
          }
        }
        const interactive = Boolean(process.stdin.isTTY);
        if (interactive && !opts.json) {
          const { serverLine } = await import("../render/server-line.js");
          const line = await serverLine(client, style);
          if (line) printErr(`${wrapWords(line, widthOf(process.stderr)).join("\n")}\n`);
        }
        if (interactive)
          note(
            'Enter sends · """ starts a multi-line block · Ctrl-G writes it in $EDITOR · /help · Ctrl-T shows/hides reasoning · Ctrl-C cancels a turn · Ctrl-D quits',
          );
        let last: ExitCode = ExitCode.ok;
        for await (let text of interactive ? promptLines(style, () => mode.current ?? "ask") : stdinLines()) {
          // Slash commands (/help, /compact, /status, …) are the CLI's, never the model's;
          // a custom command's (/name args) becomes the message instead.
          if (/^\/(\?|[a-z0-9][a-z0-9_-]*)(\s|$)/.test(text.trim())) {
            let outcome: SlashOutcome;
            try {
              outcome = await runSlashCommand(text, { client, sessionId, style, note, mode });
            } catch (err) {
              note(`${text.trim()}: ${messageOf(err)}`);
              continue;
            }
            if (outcome.kind === "quit") break;
            if (outcome.kind === "unknown")
              note(`unknown command ${text.trim().split(/\s+/)[0]}; /help lists them (nothing was sent)`);
            if (outcome.kind !== "send") continue;
            text = outcome.text;
          }
          if (!sessionId) {
            // Created on the first message so the session's title says what it is about.
            const s = await client.createSession({ role: SessionRole.MAIN, title: text.slice(0, 80) });
            sessionId = s.id;
            if (mode.current) await client.setSessionMode({ sessionId, mode: mode.current });
            note(
              `session ${s.id}${mode.current ? ` · mode ${mode.current}` : ""}${s.instructionsFile ? ` · project instructions from ${s.instructionsFile}` : ""}`,
            );
          }
          last = await sendAndRender(client, sessionId, text, {
            json: !!opts.json,
            reasoning: !!opts.reasoning,
            askInPlace: true,
            reach: reachPrefix(await g.socket()),
            reasoningKey: true,
            ...(budgets ? { budgets } : {}),
          });
        }
        // A person ending a chat is not a failure; a script wants the last turn's outcome.
        process.exitCode = interactive ? ExitCode.ok : last;
      });
    });
}

async function* promptLines(style: import("../render/style.js").Style, label: () => string): AsyncGenerator<string> {
  const { PromptReader } = await import("../prompt-reader.js");
  const reader = new PromptReader(style, undefined, label);
  for (;;) {
    const line = await reader.next();
    if (line === undefined) return;
    yield line;
  }
}

async function* stdinLines(): AsyncGenerator<string> {
  const { createInterface } = await import("node:readline");
  for await (const line of createInterface({ input: process.stdin, terminal: false })) {
    if (line.trim()) yield line;
  }
}
