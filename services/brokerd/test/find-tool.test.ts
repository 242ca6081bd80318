import { describe, expect, it } from "vitest";
import { ToolIndex, formatFound, words } from "../src/find-tool.js";
import type { ToolDef } from "../src/tool-table.js";

const tool = (name: string, description: string, params: string[] = []): ToolDef => ({
  name,
  description,
  parameters: { type: "object", properties: Object.fromEntries(params.map((p) => [p, { type: "string" }])) },
  risk: "read",
  core: false,
  kind: "mcp",
  origin: "test",
  plan: () => {
    throw new Error("not run");
  },
});

const tools = [
  tool("github.create_issue", "Create a new issue in a GitHub repository", ["repo", "title", "body"]),
  tool("github.list_pulls", "List pull requests of a repository", ["repo", "state"]),
  tool("jira.create_ticket", "Open a Jira ticket", ["project", "summary"]),
  tool("read_blob", "Read lines of a stored large result", ["blob", "start_line"]),
  tool("grep_blob", "Search a stored large result for a regex", ["blob", "pattern"]),
  tool("weather.forecast", "Get the weather forecast for a city", ["city"]),
];
const index = new ToolIndex(tools);
const top = (q: string, n = 1) => index.search(q, n).map((r) => r.tool.name);

describe("find_tool ranking", () => {
  it("splits names into words", () => {
    expect(words("github.create_issue")).toEqual(["github", "create", "issue"]);
    expect(words("readFile list-dirs")).toEqual(["read", "file", "list", "dirs"]);
  });

  it("ranks by names, descriptions and parameter names", () => {
    expect(top("create an issue on github")).toEqual(["github.create_issue"]);
    expect(top("pull requests")).toEqual(["github.list_pulls"]);
    expect(top("jira")).toEqual(["jira.create_ticket"]);
    expect(top("weather in a city")).toEqual(["weather.forecast"]);
    expect(top("search a stored result with a regex")).toEqual(["grep_blob"]);
    expect(top("city")).toEqual(["weather.forecast"]);
  });

  it("an exact name wins and partial words count", () => {
    expect(top("read_blob")).toEqual(["read_blob"]);
    expect(top("repositor")).toContain("github.create_issue");
    expect(top("issues")).toEqual(["github.create_issue"]);
  });

  it("returns nothing for unrelated words, and at most the limit", () => {
    expect(index.search("zzzqqq", 3)).toEqual([]);
    expect(index.search("github repository", 1)).toHaveLength(1);
  });

  it("is deterministic whatever order the tools were registered in", () => {
    const reversed = new ToolIndex([...tools].reverse());
    for (const q of ["create", "stored result", "repo"]) {
      expect(reversed.search(q, 5).map((r) => r.tool.name)).toEqual(index.search(q, 5).map((r) => r.tool.name));
    }
  });

  it("formats full schemas and only ever names call_tool as the way to call them", () => {
    const text = formatFound("issue", index.search("issue", 2));
    expect(text).toContain("github.create_issue: Create a new issue");
    expect(text).toContain('"properties":{"repo"');
    expect(text).toContain("call_tool(");
    expect(formatFound("zzz", [])).toMatch(/No tool matched "zzz"/);
  });
});
