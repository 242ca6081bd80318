import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { cleanText, hasHiddenCharacters } from "./clean-text.js";

/**
 * What brokerd takes from one server's tools/list. A server is hostile input:
 * one answering 120,000 tools held brokerd at 505 MiB; these bound what a
 * server costs whatever it sends, far above what real servers list (tens of
 * tools, schemas of a few KiB, depth under 20).
 */
export const TOOL_LIMITS = {
  /** Tools per server; the rest are refused. */
  tools: 1000,
  /** tools/list pages followed per connect. */
  pages: 50,
  /** Nested objects and arrays in one tool's inputSchema. */
  schemaDepth: 64,
  /** One tool's inputSchema as JSON, in bytes. */
  schemaBytes: 64 * 1024,
  /** Characters of a description (the model reads it; find_tool indexes it). */
  descriptionChars: 4096,
  titleChars: 256,
} as const;

/** The MCP spec's tool-name characters: safe in `server.tool`, policy globs, the index and a terminal. */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

export interface Refusal {
  tool: string;
  why: string;
}

/**
 * Depth first and iteratively, so a hostile depth cannot overflow the stack
 * here; then, bounded, the size. Keys and strings other than descriptions
 * and titles must not hide characters: they are argument names and values the
 * model copies back, and cannot be cleaned without changing what the server
 * receives.
 */
function schemaProblem(schema: unknown): string | undefined {
  const stack: Array<[unknown, number, string | undefined]> = [[schema, 1, undefined]];
  while (stack.length) {
    const [v, depth, key] = stack.pop()!;
    if (typeof v === "string") {
      if (key !== "description" && key !== "title" && hasHiddenCharacters(v))
        return "its schema holds control or invisible characters";
    } else if (v && typeof v === "object") {
      if (depth > TOOL_LIMITS.schemaDepth) return `its schema is nested more than ${TOOL_LIMITS.schemaDepth} deep`;
      for (const [k, x] of Object.entries(v)) {
        if (hasHiddenCharacters(k)) return "its schema holds control or invisible characters";
        stack.push([x, depth + 1, Array.isArray(v) ? undefined : k]);
      }
    }
  }
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > TOOL_LIMITS.schemaBytes)
    return `its schema is ${bytes} bytes of JSON, over the ${TOOL_LIMITS.schemaBytes}-byte limit`;
  return undefined;
}

/** A copy with every description and title cleaned (depth already bounded). */
function cleanSchema(v: unknown, key?: string): unknown {
  if (typeof v === "string")
    return key === "description" || key === "title" ? cleanText(v, TOOL_LIMITS.descriptionChars) : v;
  if (Array.isArray(v)) return v.map((x) => cleanSchema(x));
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cleanSchema(x, k)]));
  return v;
}

/**
 * The tools of one server that brokerd will offer, cleaned, and why the rest
 * are not: a name outside the safe characters, a schema too deep or too big,
 * a name listed twice, or past the per-server limit.
 */
export function admitTools(listed: readonly Tool[]): { tools: Tool[]; refused: Refusal[] } {
  const tools: Tool[] = [];
  const refused: Refusal[] = [];
  const seen = new Set<string>();
  for (const t of listed) {
    const name = typeof t.name === "string" ? t.name : "";
    const shown = cleanText(name, 64) || "(unnamed)";
    let why: string | undefined;
    if (!TOOL_NAME.test(name)) why = "its name is not 1-64 of A-Z a-z 0-9 _ - .";
    else if (seen.has(name)) why = "it is listed twice";
    else if (tools.length >= TOOL_LIMITS.tools) why = `the server lists more than ${TOOL_LIMITS.tools} tools`;
    else why = schemaProblem(t.inputSchema);
    if (why) {
      refused.push({ tool: shown, why });
      continue;
    }
    seen.add(name);
    const description = cleanText(t.description, TOOL_LIMITS.descriptionChars);
    const title = cleanText(t.title, TOOL_LIMITS.titleChars);
    tools.push({
      ...t,
      inputSchema: cleanSchema(t.inputSchema) as Tool["inputSchema"],
      ...(t.description !== undefined ? { description } : {}),
      ...(t.title !== undefined ? { title } : {}),
    });
  }
  return { tools, refused };
}
