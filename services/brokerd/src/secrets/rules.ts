import { RE2JS } from "re2js";
import data from "./rules.json" with { type: "json" };

/** One recognition rule as rules.json holds it (gitleaks' fields, verbatim). */
interface RuleData {
  id: string;
  source: string;
  description: string;
  regex: string;
  keywords: string[];
  entropy?: number;
  secretGroup?: number;
  multiline?: boolean;
  examples: string[];
}

export interface SecretRule {
  readonly id: string;
  readonly re: RE2JS;
  /** Lower-case; the rule runs only on text holding one of them (gitleaks' own prefilter). */
  readonly keywords: readonly string[];
  /** Shannon entropy (bits per character) the secret must reach; 0: any. */
  readonly entropy: number;
  /** Which group is the secret: what is measured and masked. 0: the whole match. */
  readonly group: number;
  /** Its match can span lines (a key block); every other rule is run on single lines only. */
  readonly multiline: boolean;
  readonly examples: readonly string[];
}

/**
 * The rules, compiled once. RE2 syntax is kept as gitleaks writes it and run
 * by re2js (an RE2 port): no translation to JS regex to get wrong, and a
 * linear-time match on whatever a file or a server returns.
 */
export function loadRules(rules: readonly RuleData[] = data.rules): SecretRule[] {
  return rules.map((r) => {
    const re = RE2JS.compile(r.regex);
    // gitleaks' default: the first group when the rule has one and names none.
    const group = r.secretGroup ?? (re.groupCount() > 0 ? 1 : 0);
    return {
      id: r.id,
      re,
      keywords: r.keywords.map((k) => k.toLowerCase()),
      entropy: r.entropy ?? 0,
      group,
      multiline: r.multiline ?? false,
      examples: r.examples,
    };
  });
}

export const RULE_SOURCE = data.upstream;
