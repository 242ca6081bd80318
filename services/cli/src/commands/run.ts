import type { Command } from "commander";
import { sessionOption } from "../completion/value-kinds.js";
import { withClient } from "../connection.js";
import { readPrompt } from "../prompt-input.js";
import { addBudgetOptions, budgetsFrom, type BudgetFlags } from "../budget-options.js";
import type { GlobalOptions } from "../global-options.js";
import { reachPrefix } from "../socket-choice.js";
import { printErr } from "../render/terminal-safe.js";
import { MODE_CHOICES, modeFlag, modeOption } from "./mode.js";
import { commandPrompt } from "./commands.js";
import { UsageError } from "../errors.js";

interface RunFlags extends BudgetFlags {
  json?: boolean;
  reasoning?: boolean;
  mode?: string;
  command?: string;
  session?: string;
  continue?: boolean;
  edit?: boolean;
}

export function register(program: Command, globals: () => GlobalOptions): void {
  const cmd = program
    .command("run")
    .description("run a one-shot task in a new session (or continue one) and stream it until done")
    .argument("[prompt...]", "the task; `-` reads it from stdin (with --command: the command's arguments)")
    .option("--json", "one JSON event per line on stdout")
    .option("--reasoning", "show the model's reasoning (dimmed) instead of a one-line summary")
    .option("--command <name>", "send the custom command NAME's prompt, with the arguments (see `boxmaker commands`)")
    .addOption(
      sessionOption(
        "--session <id>",
        "send the prompt to this existing session instead of a new one (a unique prefix is enough)",
      ),
    )
    .option("-c, --continue", "send the prompt to the most recent session (the last main session not archived)")
    .option("-e, --edit", "write the prompt in $VISUAL or $EDITOR first (starting from the words given, if any)")
    .addOption(
      modeOption(`permission mode: ${MODE_CHOICES} (default: cli.json's mode, else ask; see \`boxmaker mode --help\`)`),
    );
  addBudgetOptions(cmd)
    .addHelpText(
      "after",
      `
Examples:
  boxmaker run "summarise README.md"
  git diff | boxmaker run -
  boxmaker run --max-iterations 3 "fix the failing test"
  boxmaker run --mode read-only "plan how to split parser.ts"
  boxmaker run -c "now add a test for it"
  boxmaker run --edit "review the error handling in"
  boxmaker run --session s-mx4f7p33 "and the README"
  boxmaker run --command review src/app.ts "error handling"
  boxmaker run --json "list the TODOs in src/" | jq -r 'select(.content) | .content.text'`,
    )
    .action(async (words: string[], opts: RunFlags) => {
      const g = globals();
      const mode = opts.mode === undefined ? g.mode : modeFlag(opts.mode);
      if (opts.edit && opts.command !== undefined)
        throw new UsageError("--edit and --command both give the prompt: use one");
      let text = opts.edit ? await editedPrompt(words) : opts.command === undefined ? await readPrompt(words) : "";
      const budgets = budgetsFrom(opts);
      // Loaded here, not at the top: `boxmaker --help` must not pay for gRPC.
      const { SessionRole } = await import("@boxmaker/common/client");
      const { sendAndRender } = await import("../turn-stream.js");
      if (opts.session !== undefined && opts.continue)
        throw new UsageError("--session and --continue both name the session: give one");
      await withClient(g, async (client) => {
        if (opts.command !== undefined) {
          text = await commandPrompt(client, opts.command, words);
        }
        const existing =
          opts.session !== undefined
            ? opts.session
            : opts.continue
              ? await (await import("../last-session.js")).lastSessionId(client)
              : undefined;
        // A continued session keeps its own mode unless --mode says otherwise; cli.json's is for new ones.
        const continuedMode = opts.mode === undefined ? undefined : mode;
        const s = existing
          ? (await client.getSession({ id: existing })).session!
          : await client.createSession({ role: SessionRole.MAIN, title: text.slice(0, 80) });
        const setTo = existing ? continuedMode : mode;
        if (setTo) await client.setSessionMode({ sessionId: s.id, mode: setTo });
        if (!opts.json)
          printErr(
            `session ${s.id}${existing ? ` (continued: ${s.title || "untitled"}, ${s.messages} messages)` : ""}${setTo ? ` · mode ${setTo}` : ""}${s.instructionsFile ? ` · project instructions from ${s.instructionsFile}` : ""}\n`,
          );
        process.exitCode = await sendAndRender(client, s.id, text, {
          json: !!opts.json,
          reasoning: !!opts.reasoning,
          askInPlace: true,
          reach: reachPrefix(await g.socket()),
          ...(budgets ? { budgets } : {}),
        });
      });
    });
}

/** The prompt from the editor, on a terminal only: without one there is nobody to write it. */
async function editedPrompt(words: string[]): Promise<string> {
  if (!process.stdin.isTTY || !process.stderr.isTTY)
    throw new UsageError("--edit needs a terminal for the editor; give the prompt as arguments or `-` for stdin");
  const { editPrompt, EditorError } = await import("../editor-prompt.js");
  try {
    const text = await editPrompt(words.length ? `${words.join(" ")}\n` : "");
    if (text === undefined) throw new UsageError("the prompt is empty (the editor left it so): nothing was sent");
    return text;
  } catch (err) {
    if (err instanceof EditorError) throw new UsageError(err.message);
    throw err;
  }
}
