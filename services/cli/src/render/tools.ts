import type { McpPrompt, SearchToolsResponse, ToolSummary } from "@boxmaker/common/client";
import type { Style } from "./style.js";
import { table, truncate } from "./text.js";

const RISK_COLOR: Record<string, (s: Style) => (t: string) => string> = {
  read: (s) => s.green,
  write: (s) => s.yellow,
  exec: (s) => s.red,
  network: (s) => s.magenta,
};

export function renderTools(res: SearchToolsResponse, query: string, schema: boolean, s: Style): string {
  const out = [
    s.bold(`core tools (${res.core.length}, always in the model's tools array)`),
    list(res.core, false, schema, s),
  ];
  if (query) {
    out.push("", s.bold(`find_tool "${query}": ${res.matches.length} match${res.matches.length === 1 ? "" : "es"}`));
    out.push(res.matches.length ? list(res.matches, true, schema, s) : s.dim("  nothing matches; try other words"));
  } else {
    out.push("", s.dim("more tools sit behind find_tool; `boxmaker tools QUERY` searches them as the model would"));
  }
  return `${out.join("\n")}\n`;
}

/** The MCP servers' prompt templates, for the operator: server/name(arguments) and what each is for. */
export function renderPrompts(prompts: McpPrompt[], s: Style): string {
  if (prompts.length === 0) return `${s.dim("no MCP server offers prompts")}\n`;
  const lines = [s.bold(`MCP prompts (${prompts.length})`)];
  for (const p of prompts) {
    if (!p.name) {
      lines.push(`  ${s.bold(p.server)}: ${s.red(p.description)}`);
      continue;
    }
    const args = p.arguments.map((a) => (a.required ? a.name : `${a.name}?`)).join(", ");
    lines.push(
      `  ${s.bold(`${p.server}/${p.name}`)}(${args})${p.description ? `  ${s.dim(truncate(p.description, 100))}` : ""}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

function list(tools: ToolSummary[], scored: boolean, schema: boolean, s: Style): string {
  if (schema) {
    return tools
      .map((t) => `  ${s.bold(t.name)} ${risk(t.risk, s)}\n  ${t.description}\n${indentJson(t.parametersJson)}`)
      .join("\n\n");
  }
  const rows = tools.map((t) => [
    s.bold(t.name),
    risk(t.risk, s),
    ...(scored ? [s.dim(t.score.toFixed(2))] : []),
    truncate(t.description.split("\n")[0] ?? "", 90),
  ]);
  return table(rows)
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
}

const risk = (r: string, s: Style) => (RISK_COLOR[r]?.(s) ?? s.dim)(r || "-");

function indentJson(json: string): string {
  let pretty = json;
  try {
    pretty = JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    // shown as brokerd sent it
  }
  return pretty
    .split("\n")
    .map((l) => `    ${l}`)
    .join("\n");
}
