import { Argument, type Command } from "commander";
import type { GlobalOptions } from "../global-options.js";
import { printOut } from "../render/terminal-safe.js";
import { withClient } from "../connection.js";
import { complete, type Candidate } from "../completion/candidates.js";
import { idCandidates } from "../completion/ids.js";
import type { IdKind } from "../completion/value-kinds.js";
import { completionScript, SHELLS, type Shell } from "../completion/scripts.js";

/** A TAB waits on this at most: a loopd slower than that is not worth holding the prompt for. */
const COMPLETION_TIMEOUT_MS = 2000;

/** `completion SHELL` prints the script; the hidden `__complete` is what the script calls at every TAB. */
export function register(program: Command, globals: (flags?: { socket?: string }) => GlobalOptions): void {
  program
    .command("completion")
    .description("print the shell completion script for bash, zsh or fish")
    .addArgument(new Argument("<shell>", SHELLS.join(" | ")).choices(SHELLS))
    .addHelpText(
      "after",
      `
Completes commands, their flags, and the session, proposal and schedule ids
loopd knows (asked at each TAB; nothing when the stack is not up).

Examples:
  source <(boxmaker completion bash)     in ~/.bashrc
  source <(boxmaker completion zsh)      in ~/.zshrc, after compinit
  boxmaker completion fish > ~/.config/fish/completions/boxmaker.fish`,
    )
    .action((shell: Shell) => printOut(completionScript(shell)));

  program
    .command("__complete", { hidden: true })
    .description("what the words of a command line complete to (the completion scripts call this)")
    .argument("[words...]")
    .helpOption(false)
    .allowUnknownOption()
    .action(async (words: string[]) => {
      const c = complete(program, words.length ? words : [""]);
      if ("files" in c) return printOut(":files\n");
      const found = "words" in c ? c.words : await ids(c.ids, c.prefix, socketIn(words), globals);
      printOut(found.map((x) => (x.description ? `${x.value}\t${x.description}\n` : `${x.value}\n`)).join(""));
    });
}

/** The --socket the line being completed gives, so its ids come from the stack the line will talk to. */
function socketIn(words: readonly string[]): string | undefined {
  const i = words.lastIndexOf("--socket");
  if (i >= 0 && i + 1 < words.length - 1) return words[i + 1];
  return words.find((w) => w.startsWith("--socket="))?.slice("--socket=".length);
}

/** The ids loopd has, or none when there is no stack to ask: a TAB never prints an error into the line. */
async function ids(
  kind: IdKind,
  prefix: string,
  socket: string | undefined,
  globals: (flags?: { socket?: string }) => GlobalOptions,
): Promise<Candidate[]> {
  try {
    const g = { ...globals(socket === undefined ? {} : { socket }), timeoutMs: COMPLETION_TIMEOUT_MS };
    return await withClient(g, (client) => idCandidates(client, kind, prefix));
  } catch {
    return [];
  }
}
