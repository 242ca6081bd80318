import type { Effect, PolicyRule, Risk } from "../config-types.js";
import { matchesRuleGlob, toolGlobMatches } from "./glob.js";
import { analyzeCommand, DYNAMIC, type CommandAnalysis } from "./shell.js";

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
  /** The rule that decided: an operator rule's name or `default:<risk>`. */
  rule: string;
}

const strength: Record<Effect, number> = { allow: 0, ask: 1, deny: 2 };

const base = (w: string) => (w.includes("/") ? w.slice(w.lastIndexOf("/") + 1) : w);

/**
 * Whether a simple command starts with a prefix, word by word (the program by
 * its base name). `lenient` (deny/ask) lets a word computed at run time match
 * anything; an allow never matches what it cannot read.
 */
function startsWith(words: string[], prefix: string, lenient: boolean): boolean {
  const want = prefix.trim().split(/\s+/).filter(Boolean);
  if (want.length === 0 || words.length < want.length) return false;
  return want.every((w, i) => {
    const have = words[i]!;
    if (have === DYNAMIC) return lenient;
    return i === 0 ? base(have) === base(w) : have === w;
  });
}

function hostMatches(glob: string, host: string): boolean {
  const g = glob.toLowerCase();
  const h = host.toLowerCase();
  return g.startsWith("*.") ? h.endsWith(g.slice(1)) : g === h;
}

/**
 * Whether a rule's conditions hold. An allow rule must cover every target (all
 * paths, the whole command with no way to chain another); deny and ask rules
 * match when any target does, so the check errs towards the stricter effect.
 */
function ruleMatches(rule: PolicyRule, s: Subject, analysis?: CommandAnalysis): boolean {
  if (!toolGlobMatches(rule.tool, s.tool)) return false;
  const every = rule.effect === "allow";
  const pick = <T>(xs: T[], f: (x: T) => boolean) => xs.length > 0 && (every ? xs.every(f) : xs.some(f));
  if (rule.paths) {
    const globs = rule.paths;
    if (!pick(s.paths, (p) => globs.some((g) => matchesRuleGlob(g, p.rel, p.abs)))) return false;
  }
  if (rule.command_prefixes) {
    if (s.command === undefined) return false;
    const prefixes = rule.command_prefixes;
    const a = analysis ?? analyzeCommand(s.command);
    if (every) {
      // An allow covers the line only when the parser saw all of it, every program in it is
      // allowed, and it writes no file by redirection.
      if (a.opaque.length || a.writesFiles || a.commands.length === 0) return false;
      if (!a.commands.every((w) => prefixes.some((p) => startsWith(w, p, false)))) return false;
    } else if (!a.commands.some((w) => prefixes.some((p) => startsWith(w, p, true)))) return false;
  }
  if (rule.hosts) {
    const hosts = rule.hosts;
    if (!pick(s.hosts, (h) => hosts.some((g) => hostMatches(g, h)))) return false;
  }
  return true;
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
    if (!ruleMatches(rule, s, analysis)) return;
    if (!best || strength[rule.effect] > strength[best.effect]) {
      best = { effect: rule.effect, rule: rule.name ?? `rule[${i}]` };
    }
  });
  const d = best ?? { effect: defaults[s.risk], rule: `default:${s.risk}` };
  // What the parser cannot see through is never allowed without a person.
  if (analysis?.opaque.length && d.effect === "allow") return { effect: "ask", rule: "command:opaque" };
  return d;
}
