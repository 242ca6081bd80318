import type { Command } from "commander";
import { withClient, type LoopClient } from "../connection.js";
import type { CommandSet, CustomCommand } from "../custom-commands.js";
import type { GlobalOptions } from "../global-options.js";
import type { Style } from "../render/style.js";
import { output } from "../output.js";
import { printOut, printErr } from "../render/terminal-safe.js";
import { UsageError } from "../errors.js";
import { styleFor } from "../render/style.js";

/** The custom commands for the stack loopd runs: the operator's, then those of the workspace roots brokerd names. */
export async function loadCustomCommands(client: LoopClient): Promise<CommandSet> {
  const { findCommands } = await import("../custom-commands.js");
  const roots = (await client.status({})).broker?.workspaceRoots ?? [];
  return findCommands(roots);
}

/** One line per command, its origin in words (a workspace's were possibly written by the model). */
export function commandLines(set: CommandSet, s: Style): string[] {
  const width = Math.max(8, ...set.commands.map((c) => usage(c).length));
  return set.commands.map((c) => {
    const origin = c.origin === "workspace" ? s.yellow("workspace") : s.dim("operator");
    return `  ${usage(c).padEnd(width)}  ${c.description}  ${origin}`;
  });
}

/**
 * The message `run --command NAME ARGS` (and chat's /NAME ARGS) sends, with
 * a line on stderr naming where the command came from.
 */
export async function commandPrompt(
  client: LoopClient,
  name: string,
  args: readonly string[],
  raw?: string,
  found?: CommandSet,
): Promise<string> {
  const { expandCommand, originText } = await import("../custom-commands.js");
  const set = found ?? (await loadCustomCommands(client));
  const c = set.commands.find((x) => x.name === name.replace(/^\//, ""));
  if (!c) {
    const why = set.skipped.find((k) => k.file.endsWith(`/${name}.md`));
    throw new UsageError(
      `no custom command /${name}${why ? ` (${why.file}: ${why.why})` : ""}; \`boxmaker commands\` lists them`,
    );
  }
  const text = expandCommand(c, args, raw);
  if (!text) throw new UsageError(`/${c.name} (${c.file}) expands to an empty prompt`);
  printErr(`/${c.name}: the prompt of a ${originText(c)} command\n`);
  return text;
}

/** Chat's `/name args` for a custom command: its prompt, or undefined when there is no such command. */
export async function customCommandPrompt(client: LoopClient, line: string): Promise<string | undefined> {
  const m = /^\/(\S+)\s*([\s\S]*)$/.exec(line.trim());
  if (!m) return undefined;
  const set = await loadCustomCommands(client);
  if (!set.commands.some((c) => c.name === m[1])) return undefined;
  const { splitArgs } = await import("../custom-commands.js");
  return commandPrompt(client, m[1]!, splitArgs(m[2]!), m[2]!, set);
}

const usage = (c: Pick<CustomCommand, "name" | "argNames">) => `/${c.name}${c.argNames.map((a) => ` <${a}>`).join("")}`;

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("commands")
    .description("list the custom commands (Markdown prompt files) chat's /name and run --command use")
    .option("--json", "print the commands and the skipped files as one JSON object")
    .addHelpText(
      "after",
      `
Custom commands are Markdown files: the operator's in
$XDG_CONFIG_HOME/boxmaker/commands/NAME.md (~/.config/boxmaker/commands), and
each workspace root's .boxmaker/commands/NAME.md. Optional front matter:

  ---
  description: review a file for bugs
  arguments: file focus
  ---
  Review $file, looking for $focus. ($ARGUMENTS is every argument, $1… one each.)

A command is only a prompt: it becomes your message, nothing in it is run.
Workspace files may have been written by the model, so they are marked
"workspace", never replace an operator command or a built-in one, and are
not read through symlinks.

Examples:
  boxmaker commands
  boxmaker run --command review src/app.ts "error handling"`,
    )
    .action(async (opts: { json?: boolean }) => {
      const set = await withClient(globals(), loadCustomCommands);
      await output(opts, {
        json: () => ({
          value: {
            commands: set.commands.map((c) => ({
              name: c.name,
              description: c.description,
              arguments: c.argNames,
              origin: c.origin,
              file: c.file,
            })),
            skipped: set.skipped,
          },
        }),
        text: async () => {
          const { operatorCommandsDir } = await import("../custom-commands.js");
          const s = styleFor(process.stdout);
          if (!set.commands.length)
            printOut(
              `no custom commands (put NAME.md in ${operatorCommandsDir()} or a workspace's .boxmaker/commands/)\n`,
            );
          else printOut(`${commandLines(set, s).join("\n")}\n`);
          for (const k of set.skipped) printOut(s.dim(`skipped ${k.file}: ${k.why}\n`));
          return undefined;
        },
      });
    });
}
