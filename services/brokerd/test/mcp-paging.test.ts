// An MCP server (the official SDK, over stdio) whose tools/list never ends, each
// page with a new nextCursor: brokerd follows at most TOOL_LIMITS.pages pages and
// TOOL_LIMITS.tools tools, says in the server's status line that it stopped, and
// the server counts as connected with what was admitted (its tools callable).
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { TOOL_LIMITS } from "../src/mcp/tool-admission.js";
import { node, useMcpRig } from "./mcp-real-support.js";

const PAGING = fileURLToPath(new URL("./fixtures/mcp-paging-server.mjs", import.meta.url));
const m = useMcpRig();

const paging =
  (perPage: number, cursorBytes: number, extra: string[] = [], connectTimeoutMs = 15_000) =>
  ({ ws }: { ws: string }) => ({
    mcp_servers: {
      p: {
        transport: "stdio",
        command: node,
        args: [
          PAGING,
          "--per-page",
          String(perPage),
          "--cursor-bytes",
          String(cursorBytes),
          "--log",
          join(ws, "p.jsonl"),
          ...extra,
        ],
        sandbox: false,
        risk: "read",
        path_args: [],
        connect_timeout_ms: connectTimeoutMs,
      },
    },
  });
const pagesAsked = (ws: string) => readFileSync(join(ws, "p.jsonl"), "utf8").trim().split("\n").length;
const admitted = () => m.r.broker.table.extended().filter((t) => t.origin === "mcp:p");

describe("an SDK server paging tools/list without end", () => {
  // Tools a page × cursor length: one tool a page runs into the page limit, many into the tool limit.
  for (const [perPage, cursorBytes] of [
    [1, 8],
    [1, 64 * 1024],
    [7, 1024],
    [400, 16],
  ] as const) {
    it(`${perPage} tool(s) a page, ${cursorBytes}-byte cursors: bounded, connected with what was admitted`, async () => {
      await m.start(paging(perPage, cursorBytes));
      const heap0 = process.memoryUsage().heapUsed;
      await m.r.broker.mcp.settled();
      const byPages = perPage * TOOL_LIMITS.pages <= TOOL_LIMITS.tools;
      const pages = byPages ? TOOL_LIMITS.pages : Math.ceil((TOOL_LIMITS.tools + 1) / perPage);
      expect(pagesAsked(m.r.ws)).toBe(pages);
      expect(admitted()).toHaveLength(byPages ? perPage * TOOL_LIMITS.pages : TOOL_LIMITS.tools);
      const [line] = m.r.broker.status().mcpServers;
      expect(line).toMatch(/^p: ready \(/);
      expect(line).toMatch(
        byPages
          ? /its tool list goes on past 50 pages; the rest were not read\)$/
          : /it lists more than 1000 tools; the rest were not read\)$/,
      );
      expect(line!.length).toBeLessThan(1000);
      // What was admitted runs.
      const res = await m.r.broker.mcp.get("p")!.call("t0", {});
      expect(res).toMatchObject({ text: "ran t0", ran: true });
      // Bounded pages of small tools, not an endless list.
      expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(100 * 1024 * 1024);
    });
  }

  it("pages that each come just within the request timeout: the list as a whole ends at connect_timeout_ms, connected with the pages read", async () => {
    // 50 pages of 200 ms each would take 10 s; the whole list gets 1.5 s.
    await m.start(paging(1, 8, ["--page-delay-ms", "200"], 1500));
    await m.r.broker.mcp.settled();
    const pages = pagesAsked(m.r.ws);
    expect(pages).toBeLessThan(TOOL_LIMITS.pages);
    const [line] = m.r.broker.status().mcpServers;
    expect(line).toMatch(/^p: ready \(/);
    expect(line).toMatch(
      /its tool list took longer than connect_timeout_ms \(1500 ms\); \d+ page\(s\) were read, the rest were not\)$/,
    );
    const read = Number(/; (\d+) page\(s\)/.exec(line!)![1]);
    expect(read).toBeGreaterThan(0);
    expect(admitted()).toHaveLength(read);
    const res = await m.r.broker.mcp.get("p")!.call("t0", {});
    expect(res).toMatchObject({ text: "ran t0", ran: true });
  });
});
