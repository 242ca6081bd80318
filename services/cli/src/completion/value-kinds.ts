import { Argument, Option } from "commander";

/**
 * What the value of a command's argument or option is, for shell completion:
 * ids only loopd knows (asked for at the moment of the TAB), or file names.
 * Fixed words come from commander's own choices; everything else completes
 * to nothing rather than to a guess.
 */
export type IdKind = "sessions" | "proposals" | "schedules";
export type ValueKind = { readonly ids: IdKind } | { readonly files: true } | { readonly words: readonly string[] };

const kinds = new WeakMap<Argument | Option, ValueKind>();

/** Marks an argument or option of a command with what its value completes to; returns it for chaining. */
export function completesTo<T extends Argument | Option>(x: T, kind: ValueKind): T {
  kinds.set(x, kind);
  return x;
}

// A placeholder help shows as a file name (`-o, --output <file>`, `<model>`) completes to files, so a
// new option named like one needs no mark.
const FILE_PLACEHOLDER = /^(file|path|dir|bin|model)$/;

/** What a value of `x` completes to: its mark, its choices, a file for a file-named placeholder, else nothing. */
export function valueKindOf(x: Argument | Option): ValueKind | undefined {
  const marked = kinds.get(x);
  if (marked) return marked;
  if (x.argChoices) return { words: x.argChoices };
  const placeholder = x instanceof Option ? /[<[]([\w-]+)(?:\.\.\.)?[>\]]/.exec(x.flags)?.[1] : x.name();
  return placeholder && FILE_PLACEHOLDER.test(placeholder) ? { files: true } : undefined;
}

/** A session-id argument, `<id>` or `[id]` as help shows it. */
export const sessionArgument = (name: string, description: string): Argument =>
  completesTo(new Argument(name, description), { ids: "sessions" });

/** An option whose value is a session id (`--session <id>`). */
export const sessionOption = (flags: string, description: string): Option =>
  completesTo(new Option(flags, description), { ids: "sessions" });

/** --sandbox of up and demo: its words complete; each command checks the value itself. */
export const sandboxOption = (description: string): Option =>
  completesTo(new Option("--sandbox <mode>", description), { words: ["bwrap", "none"] });
