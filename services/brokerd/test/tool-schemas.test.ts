import { readFileSync } from "node:fs";
import { ToolDecision } from "@boxmaker/common";
import { afterEach, describe, expect, it } from "vitest";
import { CallPipeline } from "../src/call-pipeline.js";
import { builtinTable } from "../src/tools/index.js";
import { stableStringify } from "../src/tools-array.js";
import { fakeDeps } from "./fakes.js";

// Every built-in tool as the model saw it before the tools were declared with TypeBox, one per line in
// table order (core, then extended), with an operator's extra core tool: the tools array and find_tool's
// answers are made of these bytes, and any change to them resets every prompt cache.
const BEFORE = readFileSync(new URL("./fixtures/tool-schemas-before-typebox.jsonl", import.meta.url), "utf8");
const EXTRA = {
  name: "ext_tool",
  description: "an external",
  parameters: { type: "object", properties: { a: { type: "string" } } },
};

const table = () => builtinTable([EXTRA]);
const all = () => [...table().core(), ...table().extended()];

let cleanup: (() => void) | undefined;
afterEach(() => {
  cleanup?.();
  cleanup = undefined;
});

describe("the built-in tools, declared with defineTool", () => {
  it("show the model the same bytes as before: names, descriptions, parameter schemas, risks", () => {
    const now = all().map((d) =>
      stableStringify({
        name: d.name,
        description: d.description,
        parameters: d.parameters,
        risk: d.risk,
        core: d.core,
        origin: d.origin,
        selfCapped: d.selfCapped,
      }),
    );
    expect(`${now.join("\n")}\n`).toBe(BEFORE);
  });

  it("carry nothing JSON would drop or reorder in a way the model sees: plain JSON round-trips to the same schema", () => {
    for (const d of all()) {
      const plain = JSON.parse(JSON.stringify(d.parameters));
      expect(stableStringify(plain)).toBe(stableStringify(d.parameters));
      // The order of `properties` is the order the model reads the parameters in.
      expect(Object.keys(plain.properties ?? {})).toEqual(Object.keys((d.parameters.properties as object) ?? {}));
    }
  });

  it("are planned by brokerd only where they have a plan: meta and external tools have none", () => {
    const kinds = Object.fromEntries(all().map((d) => [d.name, d.kind]));
    expect(kinds).toMatchObject({ find_tool: "meta", call_tool: "meta", ext_tool: "external", read_file: "builtin" });
    for (const d of all()) expect("plan" in d).toBe(d.kind === "builtin");
  });

  it("refuse a call to a tool another daemon runs with the reason, as its throwing plan did", async () => {
    const f = fakeDeps([table().get("ext_tool")!]);
    cleanup = f.cleanup;
    const out = await new CallPipeline(f.deps).call(
      { sessionId: "s", callId: "c1", name: "ext_tool", argumentsJson: '{"a":"x"}' },
      new AbortController().signal,
    );
    expect(out).toMatchObject({
      decision: ToolDecision.DENIED,
      rule: "tool:invalid-call",
      content: expect.stringContaining("ext_tool is run by the loop, not by the tool broker"),
    });
  });
});
