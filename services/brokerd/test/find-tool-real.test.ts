// find_tool over the tool lists of the real MCP servers from npm: natural
// queries must put the right tool in the top 3, and a tool two servers both
// offer is one entry.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ToolIndex, formatFound } from "../src/find-tool.js";
import { rig, type Rig } from "./helpers.js";

const NM = fileURLToPath(new URL("../../../node_modules/@modelcontextprotocol/", import.meta.url));
const stdio = (script: string, ...args: string[]) => ({
  transport: "stdio",
  command: process.execPath,
  args: [script, ...args],
  sandbox: false,
  connect_timeout_ms: 15_000,
});

let r: Rig;
let index: ToolIndex;
beforeAll(async () => {
  r = await rig(({ ws }) => ({
    mcp_servers: {
      ev: stdio(join(NM, "server-everything/dist/index.js"), "stdio"),
      ev2: stdio(join(NM, "server-everything/dist/index.js"), "stdio"),
      fs: stdio(join(NM, "server-filesystem/dist/index.js"), ws),
    },
  }));
  await r.broker.mcp.settled();
  index = new ToolIndex(r.broker.table.extended());
}, 30_000);
afterAll(() => r?.cleanup());

const QUERIES: [string, string[]][] = [
  ["add two numbers", ["ev.get-sum"]],
  ["read the contents of a file", ["fs.read_text_file", "fs.read_file"]],
  ["save text to a file", ["fs.write_file"]],
  ["rename a file", ["fs.move_file"]],
  ["make a new folder", ["fs.create_directory"]],
  ["list files in a directory", ["fs.list_directory", "fs.list_directory_with_sizes"]],
  ["find files matching a glob pattern", ["fs.search_files"]],
  ["file size and modification time", ["fs.get_file_info"]],
  ["show me a small picture", ["ev.get-tiny-image"]],
  ["repeat my message back", ["ev.echo"]],
  ["environment variables", ["ev.get-env"]],
  ["replace some lines in a file", ["fs.edit_file"]],
  ["recursive folder hierarchy as json", ["fs.directory_tree"]],
  ["compress a file with gzip", ["ev.gzip-file-as-resource"]],
];

describe("find_tool over server-everything and server-filesystem", () => {
  it.each(QUERIES)("%s → %s in the top 3", (query, want) => {
    const top = index.search(query, 3).map((f) => f.tool.name);
    expect(
      top.some((t) => want.includes(t)),
      `${query}: got ${top.join(", ")}`,
    ).toBe(true);
  });

  it("collapses the same tool offered by two servers into one entry naming both", () => {
    const found = index.search("add two numbers", 3);
    const names = found.map((f) => f.tool.name);
    expect(names.filter((n) => n.endsWith(".get-sum"))).toEqual(["ev.get-sum"]);
    expect(found[0]!.also).toEqual(["ev2.get-sum"]);
    expect(formatFound("add two numbers", found)).toContain("(the same tool is also offered as ev2.get-sum)");
  });

  it("the collapsed name is disclosed too, so call_tool accepts either", async () => {
    await r.call("find_tool", { query: "add two numbers" }, "dup");
    const res = await r.call("call_tool", { name: "ev2.get-sum", arguments: { a: 1, b: 2 } }, "dup");
    expect(res.content).toMatch(/3/);
  });
});
