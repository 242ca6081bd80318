import { describe, expect, expectTypeOf, it } from "vitest";
import { brokerConfigSchema as schema, parseBrokerConfig } from "../src/config.js";
import type { McpServerConfig, PolicyRule } from "../src/config-types.js";
import { itMatchesTheRecordedSchema } from "../../../test/support/schema-documents.js";

// The schema as it was written out by hand, beside hand-written interfaces, before it was declared with TypeBox:
// fixtures/config-schema-before-typebox.json.
describe("brokerd's config schema, declared with TypeBox", () => {
  itMatchesTheRecordedSchema(schema, new URL("./fixtures/config-schema-before-typebox.json", import.meta.url));

  it("types an MCP server by its transport, as the schema's if/then/else requires, and null where a file may say it", () => {
    const c = parseBrokerConfig({
      mcp_servers: { a: { transport: "stdio", command: "srv" }, b: { transport: "http", url: "http://h/" } },
      policy: { rules: [{ tool: "x", effect: "deny", paths: null }] },
    });
    const servers: McpServerConfig[] = [c.mcp_servers.a!, c.mcp_servers.b!];
    for (const s of servers) {
      if (s.transport === "stdio") expectTypeOf(s.command).toEqualTypeOf<string>();
      else expectTypeOf(s.url).toEqualTypeOf<string>();
    }
    expectTypeOf<PolicyRule["paths"]>().toEqualTypeOf<string[] | null | undefined>();
    expect(c.policy.rules[0]!.paths).toBeNull();
    expect(servers.map((s) => (s.transport === "stdio" ? s.command : s.url))).toEqual(["srv", "http://h/"]);
  });
});
