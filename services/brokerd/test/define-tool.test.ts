import { Type } from "@boxmaker/common";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { MetaTool, Plan, PlannedTool } from "../src/tool-table.js";
import { defineTool } from "../src/tools/define-tool.js";

const noop = (): Plan => ({ paths: [], execute: async () => ({ text: "ran", isError: false }) });
const parameters = Type.Object(
  { path: Type.String(), lines: Type.Optional(Type.Integer({ minimum: 1 })) },
  { additionalProperties: false },
);

// The assertions marked @ts-expect-error are checked by `tsc -p tsconfig.test.json`: if one of
// these mistakes ever compiles, the type check fails.
describe("defineTool", () => {
  it("gives plan the arguments' type its schema says, and fills core, kind and origin in one place", () => {
    const seen: unknown[] = [];
    const t = defineTool({
      name: "t",
      description: "a test tool",
      parameters,
      risk: "read",
      plan(args) {
        expectTypeOf(args).toEqualTypeOf<{ path: string; lines?: number }>();
        seen.push(args);
        return noop();
      },
    });
    expect(t).toMatchObject({ core: true, kind: "builtin", origin: "builtin" });
    t.plan({ path: "a" }, {} as never);
    expect(seen).toEqual([{ path: "a" }]);
  });

  it("refuses a plan typed otherwise than its schema, and a plan on a tool brokerd does not plan", () => {
    defineTool({
      name: "t",
      description: "",
      parameters,
      risk: "read",
      // @ts-expect-error `path` is a string in the schema: a plan reading a number is a mismatch.
      plan: (args: { path: number }) => (args.path > 0 ? noop() : noop()),
    });
    const hand: PlannedTool = {
      name: "t",
      description: "",
      parameters: {},
      risk: "read",
      core: true,
      kind: "builtin",
      origin: "test",
      // @ts-expect-error without defineTool a plan takes unknown arguments: a narrower type is not assumed.
      plan: (args: { path: string }) => (args.path ? noop() : noop()),
    };
    const meta: MetaTool = {
      name: "m",
      description: "",
      parameters: {},
      risk: "read",
      core: true,
      kind: "meta",
      origin: "test",
      // @ts-expect-error a meta tool is answered by the broker: it has no plan to throw from.
      plan: noop,
    };
    expect([hand.kind, meta.kind]).toEqual(["builtin", "meta"]);
  });
});
