import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  ErrorCode,
  type ListToolsResult,
  ListToolsResultSchema,
  McpError,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { admitTools, type Refusal, TOOL_LIMITS } from "./tool-admission.js";

/**
 * The server's tools, page by page, as far as brokerd's limits go: past
 * TOOL_LIMITS.tools (one more is kept, to refuse it by name) or
 * TOOL_LIMITS.pages it stops asking and says so. The whole list shares one
 * `timeout` (connect_timeout_ms): a server answering each page just in time
 * would otherwise keep the connect going for pages × timeout. Past it, the
 * pages read so far are what the server has; a first page that does not come
 * fails the connect.
 */
export async function listTools(client: Client, timeout: number): Promise<{ listed: Tool[]; cut?: string }> {
  const listed: Tool[] = [];
  const until = Date.now() + timeout;
  const late = (page: number) => ({
    listed,
    cut: `its tool list took longer than connect_timeout_ms (${timeout} ms); ${page} page(s) were read, the rest were not`,
  });
  let cursor: string | undefined;
  for (let page = 0; ; page++) {
    if (page === TOOL_LIMITS.pages)
      return { listed, cut: `its tool list goes on past ${TOOL_LIMITS.pages} pages; the rest were not read` };
    const left = until - Date.now();
    if (page > 0 && left <= 0) return late(page);
    // The request itself, not listTools: that compiles every output schema the server sends (ajv), which brokerd never uses.
    let res: ListToolsResult;
    try {
      res = await client.request(
        { method: "tools/list", ...(cursor ? { params: { cursor } } : {}) },
        ListToolsResultSchema,
        { timeout: Math.max(1, left) },
      );
    } catch (err) {
      if (page > 0 && err instanceof McpError && err.code === ErrorCode.RequestTimeout) return late(page);
      throw err;
    }
    for (const t of res.tools) {
      if (listed.length > TOOL_LIMITS.tools)
        return { listed, cut: `it lists more than ${TOOL_LIMITS.tools} tools; the rest were not read` };
      listed.push(t);
    }
    cursor = res.nextCursor;
    if (!cursor) return { listed };
  }
}

/** The listed tools brokerd offers, and those it refuses with why: over a limit, or needing a feature it lacks. */
export function usableTools(listed: Tool[]): { tools: Tool[]; refused: Refusal[] } {
  const { tools, refused } = admitTools(listed);
  const usable = tools.filter((t) => {
    const why = missingFeature(t);
    if (why) refused.push({ tool: t.name, why });
    return !why;
  });
  return { tools: usable, refused };
}

/** Why a tool cannot run here: it needs a client feature Boxmaker does not have. */
export function missingFeature(t: Tool): string | undefined {
  const exec = (t as { execution?: { taskSupport?: string } }).execution;
  if (exec?.taskSupport === "required") return "it requires the MCP tasks extension, which Boxmaker does not support";
  return undefined;
}
