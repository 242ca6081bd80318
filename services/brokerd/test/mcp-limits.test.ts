// What one MCP server may cost brokerd, and what of its words reach the model:
// tools per server, tools/list pages, schema depth and size, names and
// descriptions cleaned of control and invisible characters.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cleanText } from "../src/mcp/clean-text.js";
import { TOOL_LIMITS } from "../src/mcp/tool-admission.js";
import { node, useMcpRig } from "./mcp-real-support.js";

const HOSTILE = fileURLToPath(new URL("./fixtures/mcp-hostile-server.mjs", import.meta.url));
const m = useMcpRig();

/** Cc but newline, Cf, lone surrogates: nothing of these may reach the model or a terminal. */
const HIDDEN = /(?!\n)\p{Cc}|\p{Cf}|\p{Cs}/u;

const hostile =
  (mode: string) =>
  ({ ws }: { ws: string }) => ({
    mcp_servers: {
      h: {
        transport: "stdio",
        command: node,
        args: [HOSTILE, "--tools", mode, "--log", join(ws, "h.jsonl")],
        sandbox: false,
        risk: "read",
        path_args: [],
        connect_timeout_ms: 15_000,
      },
    },
  });
const pagesAsked = (ws: string) =>
  readFileSync(join(ws, "h.jsonl"), "utf8")
    .trim()
    .split("\n")
    .filter((l) => JSON.parse(l).method === "tools/list").length;
const mcpTools = () => m.r.broker.table.extended().filter((t) => t.origin === "mcp:h");

describe("one server's tools/list is bounded", () => {
  it("a server listing 1,000 tools a page without end gets its first 1,000, in one status line", async () => {
    await m.start(hostile("flood"));
    const heap0 = process.memoryUsage().heapUsed;
    await m.r.broker.mcp.settled();
    expect(mcpTools()).toHaveLength(TOOL_LIMITS.tools);
    expect(pagesAsked(m.r.ws)).toBe(2);
    const [line] = m.r.broker.status().mcpServers;
    expect(line).toMatch(/^h: ready \(1000 tools; unavailable: t1000 \(the server lists more than 1000 tools\)/);
    expect(line).toMatch(/it lists more than 1000 tools; the rest were not read\)$/);
    expect(line!.length).toBeLessThan(1000);
    // Two pages of small tools, not the server's endless list.
    expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(100 * 1024 * 1024);
  });

  it("a server paging one tool at a time without end is read for 50 pages", async () => {
    await m.start(hostile("endless"));
    await m.r.broker.mcp.settled();
    expect(pagesAsked(m.r.ws)).toBe(TOOL_LIMITS.pages);
    expect(mcpTools()).toHaveLength(TOOL_LIMITS.pages);
    expect(m.r.broker.status().mcpServers[0]).toMatch(
      /^h: ready \(50 tools; its tool list goes on past 50 pages; the rest were not read\)$/,
    );
  });
});

describe("names, descriptions and schemas", () => {
  it("refuses names outside the safe characters, deep or big schemas and hidden characters in values; cleans the rest", async () => {
    await m.start(hostile("odd"));
    await m.r.broker.mcp.settled();
    expect(mcpTools().map((t) => t.name)).toEqual(["h.good"]);
    const line = m.r.broker.status().mcpServers[0]!;
    for (const why of [
      "bad/slash (its name is not 1-64 of A-Z a-z 0-9 _ - .)",
      "evil (its name is not 1-64 of A-Z a-z 0-9 _ - .)",
      `${"x".repeat(63)}… (its name`,
      "deep (its schema is nested more than 64 deep)",
      "big (its schema is ",
      "hidden_enum (its schema holds control or invisible characters)",
      "good (it is listed twice)",
    ])
      expect(line).toContain(why);
    expect(line).not.toMatch(HIDDEN);

    const good = m.r.broker.table.get("h.good")!;
    expect(good.description).not.toMatch(HIDDEN);
    expect(good.description).toMatch(/^\[31mRed\[0m evil text with a bell and x+…$/);
    expect(good.description.length).toBe(TOOL_LIMITS.descriptionChars);
    const q = (good.parameters as { properties: { q: { description: string } } }).properties.q;
    expect(q.description).toBe("query]0;title isolate");
    // What find_tool shows the model carries none of it either.
    const found = await m.r.call("find_tool", { query: "h.good" });
    expect(found.content).toContain("h.good");
    expect(found.content).not.toMatch(HIDDEN);
  });

  it("cleanText leaves no control or invisible character and keeps to its length (generated strings)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), fc.integer({ min: 1, max: 200 }), (s, max) => {
        const c = cleanText(s, max);
        expect(c).not.toMatch(HIDDEN);
        expect(c.length).toBeLessThanOrEqual(max);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string({ unit: "grapheme-ascii", maxLength: 200 }), (s) => {
        // Printable text passes through as it is (but surrounding blanks).
        expect(cleanText(s, 1000)).toBe(s.trim());
      }),
      { numRuns: 500 },
    );
  });
});
