import type { Effect, PolicyRule, Risk } from "../config-types.js";
import { DYNAMIC } from "./dynamic.js";
import { matchesRuleGlob, toolGlobMatches } from "./glob.js";
import { hostMatches } from "./hosts.js";
import { PROGRAMS, parseOptions } from "./program-options.js";
import { sameSubcommand } from "./program-options-syntax.js";
import { analyzeCommand, type CommandAnalysis } from "./shell.js";

/** What a call would touch, after path resolution: the facts rules match on. */
export interface Subject {
  tool: string;
  risk: Risk;
  paths: Array<{ rel: string; abs: string }>;
  command?: string;
  hosts: string[];
}

export interface Decision {
  effect: Effect;
  /** The rule that decided: an operator rule's name, `default:<risk>` or `command:<why>`. */
  rule: string;
}

const strength: Record<Effect, number> = { allow: 0, ask: 1, deny: 2 };

const base = (w: string) => (w.includes("/") ? w.slice(w.lastIndexOf("/") + 1) : w);

/**
 * Whether a simple command starts with a prefix, word by word (the program by
 * its base name). `lenient` (deny/ask) lets a word computed at run time match
 * anything, and reads the subcommand where the program does: past its global
 * options (`git -C . push` is `git push`), through its aliases and abbreviations
 * (`npm publ`), inside command groups (`docker image push`). An allow never
 * matches what it cannot read, and matches only the words as written.
 */
function startsWith(words: string[], prefix: string, lenient: boolean): boolean {
  const want = prefix.trim().split(/\s+/).filter(Boolean);
  if (want.length === 0 || words.length === 0 || base(words[0]!) !== base(want[0]!)) return false;
  const literal = (at: number, rest: string[]) =>
    words.length - at >= rest.length &&
    rest.every((w, i) => {
      const have = words[at + i]!;
      return have === DYNAMIC ? lenient : have === w;
    });
  if (literal(1, want.slice(1))) return true;
  if (!lenient || want.length < 2) return false;
  const syntax = PROGRAMS[base(want[0]!)];
  if (!syntax) return false;
  const globals = parseOptions(words, syntax);
  // An option the table does not know (or one computed at run time) might take the next word
  // as its value or not, so the subcommand could be any later word: the command counts as
  // matching every deny and ask rule on the program. The table is fallible (new options,
  // abbreviations such as npm's `--pref` for `--prefix`); a false match costs a question or
  // a refusal the model can rephrase, a miss would let `git --new-option push` past a deny.
  if (globals.unknown) return true;
  // So is a command that defines an alias for its subcommand on the spot.
  if (globals.options.some((o) => syntax.definesAlias?.[o.name]?.test(o.value ?? ""))) return true;
  const rest = want.slice(1);
  for (let at = globals.next; at < words.length; ) {
    const have = words[at]!;
    if (have === DYNAMIC) return true;
    if (sameSubcommand(syntax, have, rest[0]!) && literal(at + 1, rest.slice(1))) return true;
    const skip = syntax.nested?.[have];
    if (skip === undefined) return false;
    at += 1 + skip;
  }
  return false;
}

/** How a rule applies: not at all, as written, or (an allow) to a line that writes files. */
type Match = false | true | "writes";

/**
 * Whether a rule's conditions hold. An allow rule must cover every target (all
 * paths, the whole command with no way to chain another); deny and ask rules
 * match when any target does, so the check errs towards the stricter effect.
 */
function ruleMatches(rule: PolicyRule, s: Subject, analysis?: CommandAnalysis): Match {
  if (!toolGlobMatches(rule.tool, s.tool)) return false;
  const every = rule.effect === "allow";
  const pick = <T>(xs: T[], f: (x: T) => boolean) => xs.length > 0 && (every ? xs.every(f) : xs.some(f));
  if (rule.paths) {
    const globs = rule.paths;
    if (!pick(s.paths, (p) => globs.some((g) => matchesRuleGlob(g, p.rel, p.abs)))) return false;
  }
  let writes = false;
  if (rule.command_prefixes) {
    if (s.command === undefined) return false;
    const prefixes = rule.command_prefixes;
    const a = analysis ?? analyzeCommand(s.command);
    if (every) {
      // An allow covers the line only when the parser saw all of it and every program in it is allowed.
      if (a.opaque.length || a.commands.length === 0) return false;
      if (!a.commands.every((w) => prefixes.some((p) => startsWith(w, p, false)))) return false;
      writes = a.writesFiles || a.effects.some((e) => e.kind === "writes");
    } else if (!a.commands.some((w) => prefixes.some((p) => startsWith(w, p, true)))) return false;
  }
  if (rule.hosts) {
    const hosts = rule.hosts;
    if (!pick(s.hosts, (h) => hosts.some((g) => hostMatches(g, h)))) return false;
  }
  return writes ? "writes" : true;
}

/**
 * The policy decision, pure. Operator rules that match combine as deny > ask >
 * allow (order does not matter, so a later allow cannot undo an earlier deny).
 * With no matching rule, the tool's risk picks the default.
 */
export function decide(rules: readonly PolicyRule[], defaults: Record<Risk, Effect>, s: Subject): Decision {
  const analysis = s.command !== undefined ? analyzeCommand(s.command) : undefined;
  let best: Decision | undefined;
  rules.forEach((rule, i) => {
    const m = ruleMatches(rule, s, analysis);
    if (!m) return;
    // Allowed programs told to write files (`sed -i`, `find -delete`, `> out`) are a question for a person.
    const d: Decision =
      m === "writes"
        ? { effect: "ask", rule: "command:writes-files" }
        : { effect: rule.effect, rule: rule.name ?? `rule[${i}]` };
    if (!best || strength[d.effect] > strength[best.effect]) best = d;
  });
  const d = best ?? { effect: defaults[s.risk], rule: `default:${s.risk}` };
  if (d.effect !== "allow") return d;
  // What the parser cannot see through, and programs an option tells to run others (`find -exec`,
  // `git -c`, `awk 'system(…)'`), are never allowed without a person.
  if (analysis?.opaque.length) return { effect: "ask", rule: "command:opaque" };
  if (analysis?.effects.some((e) => e.kind === "runs")) return { effect: "ask", rule: "command:runs-program" };
  return d;
}
