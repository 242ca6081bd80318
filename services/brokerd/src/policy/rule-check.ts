import { ConfigError } from "@boxmaker/common";
import type { PolicyRule } from "../config-types.js";
import { toolGlobMatches } from "./glob.js";
import { hostPatternProblem } from "./hosts.js";

/**
 * Why a path glob of a rule can never match a path, or undefined when it can.
 * Paths are matched canonical (policy/paths.ts): no `.` or `..` segment, no
 * empty one, no trailing `/`, so a glob that needs one is a rule that never applies.
 */
export function pathPatternProblem(glob: string): string | undefined {
  if (glob.trim() === "") return "is empty";
  if (glob.length > 1 && glob.endsWith("/"))
    return `ends in /, which no path does: write ${glob}** for what is below it`;
  const body = glob.startsWith("/") ? glob.slice(1) : glob.startsWith("./") ? glob.slice(2) : glob;
  const segs = body.split("/");
  if (body !== "" && segs.some((s) => s === "")) return "has an empty segment (//)";
  if (segs.some((s) => s === "." || s === ".."))
    return "has a . or .. segment; paths are matched after they are resolved";
  return undefined;
}

export interface KnownTools {
  /** Every built-in tool's name (core and extended). */
  names: readonly string[];
  /** Configured MCP servers: their tools (`server.tool`) are known only once each connects. */
  mcpServers: readonly string[];
}

const COMMAND_TOOL = "run_command";

/** Whether a tool glob could match some name: a built-in one, or any `server.…` of a configured MCP server. */
function toolCanMatch(glob: string, known: KnownTools): boolean {
  if (known.names.some((n) => toolGlobMatches(glob, n))) return true;
  // A name that matches starts with the glob's text before its first `*`, so that text and
  // `server.` must agree as far as both go; past it the server's tools are not known yet.
  const star = glob.indexOf("*");
  const head = star === -1 ? glob : glob.slice(0, star);
  return known.mcpServers.some((s) => {
    const p = `${s}.`;
    if (star === -1) return head.startsWith(p) && head.length > p.length;
    return head.startsWith(p) || p.startsWith(head);
  });
}

/**
 * Every problem with the operator's rules that makes one match nothing, or match
 * other than it reads: each as one line naming the rule. Checked at start, so a
 * deny the operator believes in is never a silent no-op.
 */
export function ruleProblems(rules: readonly PolicyRule[], known: KnownTools): string[] {
  const out: string[] = [];
  rules.forEach((rule, i) => {
    const label = `policy.rules[${i}]${rule.name ? ` (${rule.name})` : ""}`;
    const say = (what: string) => out.push(`${label}: ${what}`);
    if (!toolCanMatch(rule.tool, known))
      say(
        rule.tool.includes("*")
          ? `tool "${rule.tool}" matches no tool (built-in ones, or server.tool of an MCP server in mcp_servers)`
          : `tool "${rule.tool}" is not a tool (built-in ones, or server.tool of an MCP server in mcp_servers)`,
      );
    for (const [key, list] of [
      ["paths", rule.paths],
      ["command_prefixes", rule.command_prefixes],
      ["hosts", rule.hosts],
    ] as const)
      if (list && list.length === 0)
        say(`${key} is an empty list, so the rule matches nothing: remove the key or name one`);
    for (const g of rule.paths ?? []) {
      const why = pathPatternProblem(g);
      if (why) say(`path "${g}" ${why}`);
    }
    for (const h of rule.hosts ?? []) {
      const why = hostPatternProblem(h);
      if (why) say(`host "${h}" ${why}`);
    }
    if (rule.command_prefixes) {
      if (!toolGlobMatches(rule.tool, COMMAND_TOOL))
        say(`command_prefixes apply only to ${COMMAND_TOOL}, and tool "${rule.tool}" does not cover it`);
      for (const p of rule.command_prefixes) if (p.trim() === "") say("a command prefix is empty");
    }
  });
  return out;
}

/** Refuses rules that cannot mean what they say: the first problem, and how many more there are. */
export function checkRules(rules: readonly PolicyRule[], known: KnownTools): void {
  const problems = ruleProblems(rules, known);
  if (problems.length === 0) return;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? "s" : ""})` : "";
  throw new ConfigError(`${problems[0]}${more}`);
}
