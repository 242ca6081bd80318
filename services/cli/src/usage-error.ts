import type { Command } from "commander";

/**
 * A usage error as one line: what was wrong (commander's own words, with its
 * "did you mean" when it has one) and the help of the command it is about —
 * `boxmaker schedule add --help`, not the whole of `boxmaker --help`, which a
 * typo would otherwise scroll off the screen.
 */
export function usageLine(program: Command, args: readonly string[], message: string): string {
  const path = [program.name()];
  let at: Command = program;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.startsWith("-")) {
      // `--socket ls` names a socket, not the ls command: skip an option's value.
      const o = at.options.find((x) => x.long === a || x.short === a);
      if (o && (o.required || o.optional)) i++;
      continue;
    }
    const sub = at.commands.find((c) => c.name() === a || c.aliases().includes(a));
    if (!sub) break;
    path.push(sub.name());
    at = sub;
  }
  const what = message
    .replace(/^error: /, "")
    .replace(/\s+/g, " ")
    .trim();
  return `${path.join(" ")}: ${what}; see \`${path.join(" ")} --help\``;
}
