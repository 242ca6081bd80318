import { describe, expect, it } from "vitest";
import { ConfigError } from "@boxmaker/common";
import { parseBrokerConfig } from "../src/config.js";

describe("brokerd config", () => {
  it("fills every default from the one schema", () => {
    const c = parseBrokerConfig({});
    expect(c).toMatchObject({
      socket: "/run/boxmaker/brokerd.sock",
      state_dir: "/var/lib/boxmaker/broker",
      workspace_roots: [],
      protected_paths: ["/etc/boxmaker", "/var/lib/boxmaker", "/run/boxmaker"],
      policy: { defaults: { read: "allow", write: "ask", exec: "ask", network: "ask" }, rules: [] },
      sandbox: {
        mode: "bwrap",
        allow_unsandboxed: false,
        timeout_ms: 120_000,
        output_cap_bytes: 1_048_576,
        network: false,
      },
      result_cap_bytes: 16_384,
      find_tool_results: 3,
      mcp_servers: {},
      log_level: "info",
    });
    expect(c.secret_patterns).toContain(".env.*");
  });

  it("fills MCP server defaults and requires command for stdio, url for http", () => {
    const c = parseBrokerConfig({ mcp_servers: { gh: { transport: "stdio", command: "gh-mcp" } } });
    expect(c.mcp_servers.gh).toMatchObject({ args: [], env: {}, risk: "write", timeout_ms: 30_000 });
    expect(() => parseBrokerConfig({ mcp_servers: { gh: { transport: "stdio" } } })).toThrow(
      /mcp_servers\.gh\.command" is required/,
    );
    expect(() => parseBrokerConfig({ mcp_servers: { d: { transport: "http" } } })).toThrow(
      /mcp_servers\.d\.url" is required/,
    );
  });

  it("names the bad key in one line", () => {
    const bad = (data: unknown) => {
      try {
        parseBrokerConfig(data);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        expect((err as Error).message).not.toContain("\n");
        return (err as Error).message;
      }
      throw new Error("accepted");
    };
    expect(bad({ sandbox: { mod: "bwrap" } })).toMatch(/key "sandbox\.mod" is not a known setting/);
    expect(bad({ policy: { rules: [{ tool: "*", effect: "maybe" }] } })).toMatch(/key "policy\.rules\.0\.effect"/);
    expect(bad({ result_cap_bytes: "big" })).toMatch(/key "result_cap_bytes" must be integer/);
  });
});
