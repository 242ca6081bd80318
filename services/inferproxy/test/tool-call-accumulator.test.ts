import { describe, expect, it } from "vitest";
import { ToolCallAccumulator, parseArguments, type ToolCallChunk } from "../src/completion/tool-call-accumulator.js";

const first = (index: number, id: string, name: string, args = ""): ToolCallChunk => ({
  index,
  id,
  type: "function",
  function: { name, arguments: args },
});
const more = (index: number, args: string): ToolCallChunk => ({ index, function: { arguments: args } });

function run(deltas: ToolCallChunk[][], finish = "tool_calls") {
  const acc = new ToolCallAccumulator();
  const forwarded = deltas.flatMap((d) => acc.apply(d));
  return { forwarded, calls: acc.finish(finish) };
}

describe("ToolCallAccumulator", () => {
  const args = '{"city":"Zürich \\"old town\\"","n":3,"nested":{"a":[1,2]},"s":"<&>"}';

  it.each([
    ["one delta", [[first(0, "c1", "get_weather", args)]]],
    ["empty first then whole", [[first(0, "c1", "get_weather")], [more(0, args)]]],
    ["1-character deltas", [[first(0, "c1", "get_weather")], ...[...args].map((ch) => [more(0, ch)])]],
    ["first delta carries the start", [[first(0, "c1", "get_weather", args.slice(0, 5))], [more(0, args.slice(5))]]],
  ])("%s yields the same call", (_name, deltas) => {
    const { calls } = run(deltas);
    expect(calls).toEqual([
      {
        index: 0,
        id: "c1",
        type: "function",
        name: "get_weather",
        arguments: args,
        parseError: "",
        parsed: { city: 'Zürich "old town"', n: 3, nested: { a: [1, 2] }, s: "<&>" },
      },
    ]);
  });

  it("forwards id, type and name only on an index's first delta", () => {
    const { forwarded } = run([[first(0, "c1", "f", "{")], [more(0, '"a":1}')]]);
    expect(forwarded).toEqual([
      { index: 0, id: "c1", type: "function", name: "f", argumentsDelta: "{" },
      { index: 0, id: "", type: "", name: "", argumentsDelta: '"a":1}' },
    ]);
  });

  it("keeps parallel calls apart and orders them by index", () => {
    const { calls } = run([
      [first(1, "b", "list_dir", '{"path":')],
      [first(0, "a", "read_file", '{"path":"x"}')],
      [more(1, '"/tmp"}')],
    ]);
    expect(calls.map((c) => [c.index, c.id, c.name, c.arguments, c.parseError])).toEqual([
      [0, "a", "read_file", '{"path":"x"}', ""],
      [1, "b", "list_dir", '{"path":"/tmp"}', ""],
    ]);
  });

  it("treats a delta without index as continuing the current call", () => {
    const { calls } = run([[first(0, "a", "f", "{")], [{ function: { arguments: "}" } }]]);
    expect(calls[0]!.arguments).toBe("{}");
  });

  it("reports a call cut off by length with its raw text kept (chat-stream-tool-call-xml)", () => {
    const raw = '{"query":"\\n\\"\\"\\"';
    const { calls } = run([[first(0, "AJQ", "find_tool", "{")], [more(0, raw.slice(1))]], "length");
    expect(calls[0]!.arguments).toBe(raw);
    expect(calls[0]!.parseError).toMatch(/not valid JSON.*cut off: finish_reason length/);
    expect(calls[0]!.parsed).toBeUndefined();
  });

  it.each([
    ["", /empty/],
    ["   ", /empty/],
    ["[1,2]", /not an object \(array\)/],
    ["null", /not an object \(null\)/],
    ['"s"', /not an object \(string\)/],
    ['{"a":', /not valid JSON/],
  ])("parse error for %j", (raw, msg) => {
    expect(parseArguments(raw).error).toMatch(msg);
    const { calls } = run([[first(0, "x", "f", raw)]]);
    expect(calls[0]!.arguments).toBe(raw);
    expect(calls[0]!.parseError).toMatch(msg);
  });
});
