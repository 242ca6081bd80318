/**
 * What an option makes a program do beyond what its name suggests: an operator who allows
 * `find`, `sed` or `git` means reading, and `find -delete`, `sed -i`, `awk 'system(…)'` or
 * `git -c core.pager=… log` are writes and programs of the model's choosing. `runs` means
 * code the policy cannot see (a floor of ask, like an opaque line); `writes` means files
 * written (an allow rule does not cover it, as with a `>` redirection).
 */
export interface ProgramEffect {
  kind: "runs" | "writes";
  why: string;
}

export type Check = (argv: readonly string[]) => ProgramEffect[];

export const runs = (why: string): ProgramEffect => ({ kind: "runs", why });
export const writes = (why: string): ProgramEffect => ({ kind: "writes", why });

/**
 * Whether `word` names one of `names` the way getopt_long and git's parse-options read it:
 * exactly, or as an abbreviation (`--in` for `--in-place`). An abbreviation of several names
 * is refused by the program; counting it is the safe side.
 */
export function longIs(word: string, names: readonly string[]): boolean {
  if (!word.startsWith("--") || word.length < 3) return false;
  const name = word.split("=")[0]!;
  return names.some((n) => n.startsWith(name));
}

/** A single-dash bundle (`-xIzf`) that contains one of `letters`; bundles hide value letters, so any position counts. */
export const bundleHas = (word: string, letters: string) =>
  /^-[^-]/.test(word) && [...word.slice(1)].some((c) => letters.includes(c));

export const computed = (name: string): ProgramEffect =>
  runs(`${name} is given a word computed at run time, which could be an option that writes or runs a program`);
