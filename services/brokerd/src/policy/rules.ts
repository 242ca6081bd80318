import type { Effect, PolicyRule, Risk } from "../config.js";
import { matchesRuleGlob, toolGlobMatches } from "./glob.js";

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

// Anything that lets one command line run a second command.
const SHELL_CONTROL = /[;&|`$<>()\n\r\\]/;

/** Splits a shell line at its control operators; a deny/ask prefix must catch `true && rm -rf x`. */
function segments(command: string): string[][] {
  return command
    .split(/&&|\|\||[;&|\n\r()`]|\$\(/)
    .map((s) => s.trim().split(/\s+/).filter(Boolean))
    .filter((s) => s.length > 0);
}

function startsWith(words: string[], prefix: string): boolean {
  const want = prefix.trim().split(/\s+/).filter(Boolean);
  return want.length > 0 && want.every((w, i) => words[i] === w);
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
export function ruleMatches(rule: PolicyRule, s: Subject): boolean {
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
    if (every) {
      if (SHELL_CONTROL.test(s.command)) return false;
      const words = s.command.trim().split(/\s+/);
      if (!prefixes.some((p) => startsWith(words, p))) return false;
    } else if (!segments(s.command).some((w) => prefixes.some((p) => startsWith(w, p)))) return false;
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
  let best: Decision | undefined;
  rules.forEach((rule, i) => {
    if (!ruleMatches(rule, s)) return;
    if (!best || strength[rule.effect] > strength[best.effect]) {
      best = { effect: rule.effect, rule: rule.name ?? `rule[${i}]` };
    }
  });
  return best ?? { effect: defaults[s.risk], rule: `default:${s.risk}` };
}
