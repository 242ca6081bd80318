import type { Command, Option } from "commander";
import { valueKindOf, type IdKind } from "./value-kinds.js";

/** One word the shell may offer, with what help says about it (zsh and fish show it beside the word). */
export interface Candidate {
  readonly value: string;
  readonly description: string;
}

/** What the word under the cursor completes to: words known now, ids to ask loopd for, or file names. */
export type Completion =
  | { readonly words: readonly Candidate[] }
  | { readonly ids: IdKind; readonly prefix: string }
  | { readonly files: true };

const NOTHING: Completion = { words: [] };

/**
 * What `boxmaker WORDS…` completes to, the last word being the one under the
 * cursor (empty after a space). Read from the same commander tree `--help` is
 * printed from — its visible commands and options, each argument in order — so
 * a new command or flag completes without anyone touching this. The program's
 * own options (--socket, --timeout, --no-pager) are accepted after a command
 * too, so they complete everywhere.
 */
export function complete(program: Command, words: readonly string[]): Completion {
  const cur = words.at(-1) ?? "";
  const line = parseLine(program, words.slice(0, -1));
  if (line.pendingOption) return completionOfValue(line.pendingOption, cur);
  const at = line.command;
  if (cur.startsWith("-") && !line.afterDashes) return { words: matching(flagsOf(program, at), cur) };
  const subcommands = at.createHelp().visibleCommands(at);
  if (subcommands.length && line.positionals === 0) {
    return {
      words: matching(
        subcommands.map((c) => ({ value: c.name(), description: c.description() })),
        cur,
      ),
    };
  }
  const args = at.registeredArguments;
  const arg = args[line.positionals] ?? (args.at(-1)?.variadic ? args.at(-1) : undefined);
  return arg ? completionOfValue(arg, cur) : NOTHING;
}

/** Where the words before the cursor leave the line: the command they name, its operands so far, an option still owed its value. */
interface LineState {
  command: Command;
  positionals: number;
  afterDashes: boolean;
  pendingOption?: Option;
}

function parseLine(program: Command, words: readonly string[]): LineState {
  const state: LineState = { command: program, positionals: 0, afterDashes: false };
  for (const w of words) {
    if (state.pendingOption) {
      delete state.pendingOption;
      continue;
    }
    if (!state.afterDashes && w === "--") {
      state.afterDashes = true;
      continue;
    }
    if (!state.afterDashes && w.startsWith("-") && w.length > 1) {
      // `--format=md` carries its value; `-f md` and `--format md` owe the next word.
      const o = w.includes("=") ? undefined : findOption(program, state.command, w);
      if (o?.required) state.pendingOption = o;
      continue;
    }
    const sub = state.positionals === 0 ? findCommand(state.command, w) : undefined;
    if (sub) state.command = sub;
    else state.positionals++;
  }
  return state;
}

function findCommand(at: Command, name: string): Command | undefined {
  return at.commands.find((c) => c.name() === name || c.aliases().includes(name));
}

function findOption(program: Command, at: Command, flag: string): Option | undefined {
  const is = (o: Option) => o.long === flag || o.short === flag;
  return at.options.find(is) ?? program.options.find(is);
}

/** The flags help lists for this command, then the program's own (which help lists only on `boxmaker --help`). */
function flagsOf(program: Command, at: Command): Candidate[] {
  const visible = (c: Command) => c.createHelp().visibleOptions(c);
  const options = at === program ? visible(program) : [...visible(at), ...visible(program).filter(isGlobal)];
  return options.flatMap((o) =>
    [o.long, o.short].filter((f): f is string => !!f).map((f) => ({ value: f, description: o.description })),
  );
}

// --help and --version belong to the program; a command has its own --help.
const isGlobal = (o: Option) => o.long !== "--help" && o.long !== "--version";

function completionOfValue(x: Parameters<typeof valueKindOf>[0], cur: string): Completion {
  const kind = valueKindOf(x);
  if (!kind) return NOTHING;
  if ("files" in kind) return kind;
  if ("ids" in kind) return { ids: kind.ids, prefix: cur };
  return {
    words: matching(
      kind.words.map((w) => ({ value: w, description: "" })),
      cur,
    ),
  };
}

const matching = (cands: readonly Candidate[], prefix: string) => cands.filter((c) => c.value.startsWith(prefix));
