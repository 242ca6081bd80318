import { ToolDecision } from "@boxmaker/common";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { realpathSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { rig, type Rig } from "./helpers.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/mcp-stdio-server.mjs", import.meta.url));
const stdio = (extra: Record<string, unknown> = {}) => ({
  transport: "stdio",
  command: process.execPath,
  args: [FIXTURE],
  risk: "read",
  timeout_ms: 1500,
  // The fixture's "path" is a remote document name, not a file.
  path_args: [],
  sandbox: false,
  ...extra,
});
const fast = { initial_ms: 50, max_ms: 200 };

let r: Rig | undefined;
let http: HttpServer | undefined;
afterEach(async () => {
  await r?.cleanup();
  r = undefined;
  http?.closeAllConnections();
  await new Promise<void>((res) => (http ? http.close(() => res()) : res()));
  http = undefined;
});

/** find_tool, then call_tool: the only way the model reaches an MCP tool. */
async function viaCallTool(name: string, args: Record<string, unknown> = {}, session = "s1") {
  await r!.broker.mcp.settled();
  await r!.call("find_tool", { query: name }, session);
  return r!.call("call_tool", { name, arguments: args }, session);
}

describe("MCP over stdio (the SDK's own server)", () => {
  it("adds the server's tools to the extended set only: the tools array does not change", async () => {
    const plain = await rig();
    const plainSha = plain.broker.toolsArray.sha256;
    await plain.cleanup();
    r = await rig({ mcp_servers: { fx: stdio() }, mcp_reconnect: fast });
    await r.broker.mcp.settled();
    expect(r.broker.toolsArray.sha256).toBe(plainSha);
    expect(r.broker.table.get("fx.echo")).toMatchObject({ core: false, kind: "mcp", risk: "read" });
    expect(r.broker.status().mcpServers).toEqual(["fx: ready (6 tools)"]);
    const found = await r.call("find_tool", { query: "echo the given text" });
    expect(found.content).toMatch(/^1 tool|fx\.echo/m);
    expect(found.content).toContain("1. fx.echo: Echo the given text back");
    const res = await r.call("call_tool", { name: "fx.echo", arguments: { text: "hi" } });
    expect(res).toMatchObject({
      decision: ToolDecision.ALLOWED,
      content: "echo: hi",
      isError: false,
      resolvedName: "fx.echo",
    });
  });

  it("validates MCP arguments against the server's schema before calling", async () => {
    r = await rig({ mcp_servers: { fx: stdio() }, mcp_reconnect: fast });
    const res = await viaCallTool("fx.echo", { text: 5 });
    expect(res).toMatchObject({ decision: ToolDecision.DENIED, rule: "arguments:schema" });
    expect(res.content).toMatch(/text: must be string/);
  });

  it("passes content through whether isError is false with an error text or true", async () => {
    r = await rig({ mcp_servers: { fx: stdio() }, mcp_reconnect: fast });
    const soft = await viaCallTool("fx.read_remote", { path: "/doc" });
    expect(soft).toMatchObject({
      decision: ToolDecision.ALLOWED,
      isError: false,
      content: "Error: could not read /doc: no such document",
    });
    const hard = await viaCallTool("fx.explode");
    expect(hard).toMatchObject({ decision: ToolDecision.ALLOWED, isError: true, content: "it blew up" });
  });

  it("turns JSON-RPC -32601 into a clear tool error and keeps the server", async () => {
    r = await rig({ mcp_servers: { fx: stdio() }, mcp_reconnect: fast });
    const pid = (await viaCallTool("fx.pid")).content;
    const res = await viaCallTool("fx.vanished");
    expect(res.isError).toBe(true);
    expect(res.content).toMatch(/JSON-RPC error -32601 \(method or tool not found\): Tool not found: vanished/);
    expect(res.content).toMatch(/call find_tool/);
    expect((await viaCallTool("fx.pid")).content).toBe(pid);
  });

  it("a hung call errors within its timeout, brokerd keeps serving, and a server that still answers pings is kept", async () => {
    r = await rig({ mcp_servers: { fx: stdio() }, mcp_reconnect: fast });
    const firstPid = (await viaCallTool("fx.pid")).content;
    const hung = viaCallTool("fx.hang");
    const meanwhile = await r.call("list_dir", {});
    expect(meanwhile.decision).toBe(ToolDecision.ALLOWED);
    const res = await hung;
    expect(res).toMatchObject({ decision: ToolDecision.ALLOWED, isError: true });
    expect(res.content).toMatch(
      /did not answer hang within 1500 ms; the call was cancelled \(the server is alive; other calls are unaffected\)/,
    );
    expect((await viaCallTool("fx.pid")).content).toBe(firstPid);
  });

  it("a server that cannot start never blocks brokerd; calls get an error naming it", async () => {
    r = await rig({
      mcp_servers: { dead: stdio({ args: ["-e", "process.exit(3)"] }), fx: stdio() },
      mcp_reconnect: { initial_ms: 60_000, max_ms: 60_000 },
    });
    await r.broker.mcp.settled();
    expect(r.broker.status().mcpServers[0]).toMatch(/^dead: down \(/);
    expect((await viaCallTool("fx.echo", { text: "still" })).content).toBe("echo: still");
    expect(r.broker.table.get("dead.echo")).toBeUndefined();
    const res = await r.call("call_tool", { name: "dead.echo", arguments: {} });
    expect(res.content).toMatch(/no tool named "dead.echo"/);
  });

  it("by default an MCP tool's risk is write: the call is staged and runs on approval", async () => {
    r = await rig({ mcp_servers: { fx: stdio({ risk: undefined }) }, mcp_reconnect: fast });
    await r.broker.mcp.settled();
    const res = await viaCallTool("fx.echo", { text: "later" });
    expect(res).toMatchObject({ decision: ToolDecision.STAGED, rule: "default:write" });
    const done = await r.broker.decideProposal(res.proposalId, true, "");
    expect(done).toMatchObject({ state: "applied", result: "echo: later" });
  });
});

function httpMcpServer(): Server {
  const server = new Server({ name: "fixture-http", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: "search",
        description: "Search the documentation",
        inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
      },
      { name: "hang", description: "Never answers", inputSchema: { type: "object", properties: {} } },
      { name: "gone", description: "Unknown when called", inputSchema: { type: "object", properties: {} } },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    if (req.params.name === "search")
      return { content: [{ type: "text", text: `results for ${String(req.params.arguments?.q)}` }] };
    if (req.params.name === "hang") return new Promise(() => {});
    throw new McpError(ErrorCode.MethodNotFound, `Tool not found: ${req.params.name}`);
  });
  return server;
}

/** Stateless Streamable HTTP on 127.0.0.1: a fresh server and transport per request, as the SDK recommends. */
async function startHttp(port = 0): Promise<number> {
  http = createServer(async (req, res) => {
    const server = httpMcpServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((res) => http!.listen(port, "127.0.0.1", () => res()));
  return (http.address() as AddressInfo).port;
}

describe("MCP over Streamable HTTP", () => {
  it("calls tools, maps -32601, survives a hang and reconnects after the server comes back", async () => {
    const port = await startHttp();
    r = await rig({
      mcp_servers: { docs: { transport: "http", url: `http://127.0.0.1:${port}/mcp`, risk: "read", timeout_ms: 1000 } },
      mcp_reconnect: fast,
    });
    await r.broker.mcp.settled();
    expect((await viaCallTool("docs.search", { q: "bwrap" })).content).toBe("results for bwrap");
    const gone = await viaCallTool("docs.gone");
    expect(gone.content).toMatch(/JSON-RPC error -32601.*Tool not found: gone/);
    const hung = await viaCallTool("docs.hang");
    expect(hung.content).toMatch(/did not answer hang within 1000 ms; the call was cancelled/);

    // The server goes away entirely, then comes back on the same port.
    http!.closeAllConnections();
    await new Promise<void>((res) => http!.close(() => res()));
    http = undefined;
    const down = await vi.waitFor(
      async () => {
        const res = await viaCallTool("docs.search", { q: "x" });
        if (!res.isError) throw new Error("still up");
        return res;
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(down.content).toMatch(/MCP server "docs"/);
    await startHttp(port);
    const back = await vi.waitFor(
      async () => {
        const res = await viaCallTool("docs.search", { q: "again" });
        if (res.isError) throw new Error(res.content);
        return res;
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(back.content).toBe("results for again");
  });
});

describe("MCP tool mapping", async () => {
  const { toolRisk, pathArgs } = await import("../src/mcp/manager.js");
  const { missingFeature } = await import("../src/mcp/connection.js");
  const { programPaths } = await import("../src/mcp/program-paths.js");
  const { parseBrokerConfig } = await import("../src/config.js");
  const cfg = (extra: Record<string, unknown> = {}) =>
    parseBrokerConfig({ mcp_servers: { s: { transport: "stdio", command: "x", ...extra } } }).mcp_servers.s!;
  const t = (annotations: Record<string, unknown> | undefined, props: string[] = []) =>
    ({
      name: "t",
      inputSchema: { type: "object", properties: Object.fromEntries(props.map((p) => [p, {}])) },
      ...(annotations ? { annotations } : {}),
    }) as never;

  it("risk: annotations, else the server's risk; a per-tool override wins", () => {
    expect(toolRisk(cfg(), t({ readOnlyHint: true }))).toBe("read");
    expect(toolRisk(cfg(), t({ readOnlyHint: true, openWorldHint: true }))).toBe("network");
    expect(toolRisk(cfg(), t({ destructiveHint: true }))).toBe("write");
    expect(toolRisk(cfg(), t({ readOnlyHint: false, destructiveHint: false }))).toBe("write");
    expect(toolRisk(cfg({ risk: "read" }), t(undefined))).toBe("read");
    expect(toolRisk(cfg({ tools: { t: { risk: "exec" } } }), t({ readOnlyHint: true }))).toBe("exec");
  });

  it("path arguments: defaults the schema has, else configured per server or tool", () => {
    expect(pathArgs(cfg(), t(undefined, ["path", "content"]))).toEqual(["path"]);
    expect(pathArgs(cfg({ path_args: [] }), t(undefined, ["path"]))).toEqual([]);
    expect(pathArgs(cfg({ tools: { t: { path_args: ["where"] } } }), t(undefined, ["path"]))).toEqual(["where"]);
  });

  it("tools needing tasks are unavailable; a script's package, node's bin and node_modules are bound read-only", () => {
    expect(
      missingFeature({ name: "x", inputSchema: { type: "object" }, execution: { taskSupport: "required" } } as never),
    ).toMatch(/tasks/);
    expect(
      missingFeature({ name: "x", inputSchema: { type: "object" }, execution: { taskSupport: "optional" } } as never),
    ).toBeUndefined();
    const paths = programPaths([process.execPath, FIXTURE], { exposes: () => undefined, isSecret: () => false });
    // The fixture lives in brokerd's package: the package comes whole, for its imports.
    expect(paths).toContain(dirname(fileURLToPath(new URL("../package.json", import.meta.url))));
    expect(paths).toContain(dirname(realpathSync(process.execPath)));
    expect(paths.some((p) => p.endsWith("/node_modules"))).toBe(true);
  });
});
