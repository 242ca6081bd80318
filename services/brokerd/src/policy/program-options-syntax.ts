/**
 * How programs read the options before their subcommand (or, for wrappers, before the command they
 * run): the one table both the rule matcher (`git -C . push` is `git push`) and the shell analysis
 * (`sudo -Eu root rm` runs `rm`) read. Written from each program's manual and, where installed,
 * checked against the program itself (git 2.39, GNU coreutils/findutils 9.x/4.9, sudo 1.9).
 */
export interface OptionSyntax {
  /** Options whose value is the next word, or joined: `--git-dir=x`, and for one letter `-Cx`. */
  value: readonly string[];
  /** Options that take no value. */
  flags: readonly string[];
  /** Options whose value can only be joined (`--exec-path=dir`, xargs `-i{}`); bare, they are flags. */
  joined?: readonly string[];
  /** getopt-style: one-letter flags bundle (`-Eu root` is `-E -u root`). */
  bundles?: boolean;
  /** `-5` is an option (nice's old adjustment form). */
  numeric?: boolean;
  /** nopt (npm): a boolean option may swallow a following `true`/`false`. */
  boolWords?: boolean;
  /** A first word that is not the subcommand (cargo's `+nightly`). */
  leading?: RegExp;
  /** Global options that run a program or load a config that can name one. */
  runs?: readonly string[];
  /** Global options whose value can define a subcommand alias (`git -c alias.p=push p`). */
  definesAlias?: Readonly<Record<string, RegExp>>;
  /** Words that are another subcommand (npm `i` is `install`, cargo `b` is `build`). */
  aliases?: Readonly<Record<string, string>>;
  /** The program runs any unambiguous prefix of a subcommand (npm `publ` is `publish`). */
  abbreviates?: boolean;
  /** Subcommands whose real subcommand comes after N more words (`docker image push`, `yarn workspace w publish`). */
  nested?: Readonly<Record<string, number>>;
  /** A wrapper: words before the command it runs (timeout's DURATION, flock's FILE). */
  operands?: number;
}

/**
 * Whether the subcommand word `have` is the subcommand `want`, for a program that has
 * aliases or runs abbreviations. An abbreviation is matched by prefix, which also matches
 * the ambiguous ones the program itself refuses: harmless for deny and ask.
 */
export function sameSubcommand(syntax: OptionSyntax, have: string, want: string): boolean {
  if (have === want) return true;
  const canon = (w: string) => syntax.aliases?.[w] ?? w;
  if (canon(have) === canon(want)) return true;
  if (!syntax.abbreviates || have.length === 0 || syntax.aliases?.[have] !== undefined) return false;
  const names = [want, ...Object.entries(syntax.aliases ?? {}).flatMap(([k, v]) => (v === canon(want) ? [k] : []))];
  return names.some((n) => n.startsWith(have));
}
