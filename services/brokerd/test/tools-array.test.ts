import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseBrokerConfig } from "../src/config.js";
import { builtinTable } from "../src/tools/index.js";
import { buildToolsArray, stableStringify } from "../src/tools-array.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/tools-default.json", import.meta.url));

describe("the epoch tools array", () => {
  it("for the default config is exactly the committed fixture (update it deliberately: it resets every prompt cache)", () => {
    const a = buildToolsArray(builtinTable(parseBrokerConfig({}).extra_core_tools).core());
    expect(`${a.json}\n`).toBe(readFileSync(FIXTURE, "utf8"));
  });

  it("holds the ten core tools in a fixed order, with the short meta-tool schemas", () => {
    const a = buildToolsArray(builtinTable([]).core());
    expect(a.names).toEqual([
      "read_file",
      "list_dir",
      "search_files",
      "write_file",
      "edit_file",
      "run_command",
      "find_tool",
      "call_tool",
      "spawn_agent",
      "update_plan",
    ]);
    const tools = JSON.parse(a.json) as Array<{
      type: string;
      function: { name: string; parameters: { required: string[] } };
    }>;
    expect(tools.every((t) => t.type === "function")).toBe(true);
    expect(tools[6]!.function.parameters.required).toEqual(["query"]);
    expect(tools[7]!.function.parameters.required).toEqual(["name", "arguments"]);
    // ~4 characters per token: the core array stays well under 1,500 tokens.
    expect(a.json.length / 4).toBeLessThan(1000);
  });

  it("is byte-identical across builds, and independent of key order in the config", () => {
    const one = buildToolsArray(builtinTable([]).core());
    const two = buildToolsArray(builtinTable([]).core());
    expect(two.json).toBe(one.json);
    expect(two.sha256).toBe(one.sha256);
    const spawnA = {
      name: "plan_review",
      description: "Ask for a plan review",
      parameters: {
        type: "object",
        properties: { task: { type: "string" }, budget: { type: "integer" } },
        required: ["task"],
      },
    };
    const spawnB = {
      parameters: {
        required: ["task"],
        properties: { task: { type: "string" }, budget: { type: "integer" } },
        type: "object",
      },
      description: "Ask for a plan review",
      name: "plan_review",
    };
    const a = buildToolsArray(builtinTable(parseBrokerConfig({ extra_core_tools: [spawnA] }).extra_core_tools).core());
    const b = buildToolsArray(builtinTable(parseBrokerConfig({ extra_core_tools: [spawnB] }).extra_core_tools).core());
    expect(b.json).toBe(a.json);
    expect(a.names.at(-1)).toBe("plan_review");
    expect(a.sha256).not.toBe(one.sha256);
  });

  it("keeps parameter order (the model reads it) while sorting every other key", () => {
    expect(stableStringify({ b: 1, a: { properties: { z: { type: "string", description: "d" }, a: {} } } })).toBe(
      '{"a":{"properties":{"z":{"description":"d","type":"string"},"a":{}}},"b":1}',
    );
  });
});
