import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { useStack } from "../support/use-stack.js";

const EVERYTHING = join(
  fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/", import.meta.url)),
  "server-everything/dist/index.js",
);

/** The operator sees what prompt templates the MCP servers offer: CLI → loopd → brokerd → a real server from npm. */
describe("boxmaker tools --prompts", () => {
  const t = useStack("bxp-", {
    brokerd: {
      mcp_servers: {
        ev: {
          transport: "stdio",
          command: process.execPath,
          args: [EVERYTHING, "stdio"],
          sandbox: false,
          connect_timeout_ms: 15_000,
        },
      },
    },
  });

  it("lists each server's prompts with their arguments (required ones plain, optional ones with ?)", async () => {
    let out = { code: null as number | null, stdout: "", stderr: "" };
    // The server connects in the background after brokerd is ready: ask until it answers.
    for (let i = 0; i < 40 && !out.stdout.includes("ev/"); i++) {
      out = await t.stack.cli(["tools", "--prompts"]);
      if (!out.stdout.includes("ev/")) await new Promise((r) => setTimeout(r, 250));
    }
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("core tools");
    expect(out.stdout).toMatch(/MCP prompts \(\d+\)/);
    expect(out.stdout).toMatch(/^ {2}ev\/\S+\(.*\)/m);
    const json = await t.stack.cli(["tools", "--prompts", "--json"]);
    const res = JSON.parse(json.stdout) as { prompts: Array<{ server: string; name: string }> };
    expect(res.prompts.length).toBeGreaterThan(0);
    expect(res.prompts.every((p) => p.server === "ev")).toBe(true);
    // Without the flag nothing is asked of the servers.
    const plain = await t.stack.cli(["tools"]);
    expect(plain.stdout).not.toContain("MCP prompts");
  }, 60_000);
});
