// Acceptance tests against the real MCP servers from npm (server-everything over
// stdio and Streamable HTTP, server-filesystem over stdio).
import { ToolDecision } from "@boxmaker/common";
import { describe, expect, it } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { alive } from "../../../test/support/processes.js";
import { requires } from "../../../test/support/requirements.js";
import { EVERYTHING, FILESYSTEM, PROBE, freePort, node, startEverythingHttp, useMcpRig } from "./mcp-real-support.js";

const hasBwrap = requires("MCP stdio servers in the bwrap sandbox", ["bwrap"]);
const m = useMcpRig();

describe.skipIf(!hasBwrap)("server-filesystem (stdio, sandboxed): the path policy and the sandbox hold", () => {
  it("reads inside the workspace; outside, secrets and denied paths are refused before the server sees them", async () => {
    await m.start(
      ({ ws }) => ({
        mcp_servers: { fs: { transport: "stdio", command: node, args: [FILESYSTEM, ws], connect_timeout_ms: 15_000 } },
        policy: { rules: [{ name: "no-private", tool: "*", effect: "deny", paths: ["private/**"] }] },
      }),
      ({ ws, outside }) => {
        writeFileSync(join(ws, "a.txt"), "hello from the workspace");
        writeFileSync(join(ws, ".env"), "TOKEN=workspace-secret");
        mkdirSync(join(ws, "private"));
        writeFileSync(join(ws, "private", "p.txt"), "PRIVATE-CONTENT");
        writeFileSync(join(outside, "secret.txt"), "OUTSIDE-CONTENT");
      },
    );
    await m.r.broker.mcp.settled();
    expect(m.r.broker.status().mcpServers[0]).toMatch(/^fs: ready \(\d+ tools/);
    // Risk from annotations: move_file is destructive, read_text_file read-only.
    expect(m.r.broker.table.get("fs.read_text_file")?.risk).toBe("read");
    expect(m.r.broker.table.get("fs.move_file")?.risk).toBe("write");
    expect(m.r.broker.table.get("fs.create_directory")?.risk).toBe("write");

    const ok = await m.viaCallTool("fs.read_text_file", { path: "a.txt" });
    expect(ok).toMatchObject({ decision: ToolDecision.ALLOWED, isError: false, content: "hello from the workspace" });
    const out = await m.viaCallTool("fs.read_text_file", { path: join(m.r.outside, "secret.txt") });
    expect(out).toMatchObject({ decision: ToolDecision.DENIED, rule: "path:outside-workspace" });
    const dotdot = await m.viaCallTool("fs.read_text_file", { path: "../outside/secret.txt" });
    expect(dotdot).toMatchObject({ decision: ToolDecision.DENIED, rule: "path:outside-workspace" });
    const env = await m.viaCallTool("fs.read_text_file", { path: ".env" });
    expect(env).toMatchObject({ decision: ToolDecision.DENIED, rule: "path:secret" });
    const priv = await m.viaCallTool("fs.read_text_file", { path: "private/p.txt" });
    expect(priv).toMatchObject({ decision: ToolDecision.DENIED, rule: "no-private" });
    const many = await m.viaCallTool("fs.read_multiple_files", { paths: ["a.txt", ".env"] });
    expect(many).toMatchObject({ decision: ToolDecision.DENIED, rule: "path:secret" });
    const move = await m.viaCallTool("fs.move_file", { source: "a.txt", destination: "b.txt" });
    expect(move).toMatchObject({ decision: ToolDecision.STAGED, rule: "default:write" });
    const moveOut = await m.viaCallTool("fs.move_file", { source: "a.txt", destination: join(m.r.outside, "x.txt") });
    expect(moveOut).toMatchObject({ decision: ToolDecision.DENIED, rule: "path:outside-workspace" });
    for (const c of [ok, out, env, priv, many]) expect(c.content).not.toMatch(/OUTSIDE-CONTENT|PRIVATE-CONTENT|TOKEN=/);
  });

  it("a sandboxed server reading with plain fs sees neither outside files nor the workspace's secrets", async () => {
    await m.start(
      () => ({ mcp_servers: { probe: { transport: "stdio", command: node, args: [PROBE], path_args: [] } } }),
      ({ ws, outside }) => {
        writeFileSync(join(ws, "a.txt"), "inside");
        writeFileSync(join(ws, ".env"), "TOKEN=workspace-secret");
        writeFileSync(join(outside, "secret.txt"), "outside secret");
      },
    );
    await m.r.broker.mcp.settled();
    expect((await m.viaCallTool("probe.read_raw", { file: join(m.r.ws, "a.txt") })).content).toBe("inside");
    const out = await m.viaCallTool("probe.read_raw", { file: join(m.r.outside, "secret.txt") });
    expect(out.content).toBe("cannot read: ENOENT");
    const env = await m.viaCallTool("probe.read_raw", { file: join(m.r.ws, ".env") });
    expect(env.content).not.toContain("workspace-secret");
    const home = await m.viaCallTool("probe.read_raw", { file: "/etc/shadow" });
    expect(home.content).toMatch(/cannot read/);
  });
});

describe("server-everything over stdio", () => {
  const everything = (extra: Record<string, unknown> = {}) => ({
    transport: "stdio",
    command: node,
    args: [EVERYTHING, "stdio"],
    sandbox: hasBwrap,
    connect_timeout_ms: 15_000,
    ...extra,
  });

  it("progress extends a call past its timeout; a timed-out call is cancelled alone, the concurrent one and the server survive", async () => {
    await m.start({
      mcp_servers: { ev: everything({ timeout_ms: 1500 }) },
      mcp_reconnect: { initial_ms: 50, max_ms: 200 },
    });
    await m.r.broker.mcp.settled();
    expect(m.r.broker.table.get("ev.trigger-long-running-operation")?.risk).toBe("read");
    const conn = m.r.broker.mcp.get("ev")!;
    const pids = conn.pids();
    await m.r.call("find_tool", { query: "ev.trigger-long-running-operation" });
    const run = (args: Record<string, unknown>) =>
      m.r.call("call_tool", { name: "ev.trigger-long-running-operation", arguments: args });
    // 3 s with progress every 0.6 s; and 4 s with no progress until the end, which must time out.
    const [steady, silent] = await Promise.all([run({ duration: 3, steps: 5 }), run({ duration: 4, steps: 1 })]);
    expect(silent).toMatchObject({ isError: true });
    expect(silent.content).toMatch(
      /did not answer trigger-long-running-operation within 1500 ms; the call was cancelled \(the server is alive/,
    );
    expect(steady).toMatchObject({
      isError: false,
      content: "Long running operation completed. Duration: 3 seconds, Steps: 5.",
    });
    expect(conn.pids()).toEqual(pids);
    expect(conn.state).toBe("ready");
    const sum = await m.viaCallTool("ev.get-sum", { a: 2, b: 3 });
    expect(sum.content).toMatch(/5/);
  });

  it("a call past max_total_timeout_ms while progress keeps coming ends saying the total limit was reached", async () => {
    // Progress every 1.9 s keeps the 2.5 s timeout from firing; the 4 s total falls between two notifications.
    await m.start({ mcp_servers: { ev: everything({ timeout_ms: 2500, max_total_timeout_ms: 4000 }) } });
    await m.r.broker.mcp.settled();
    const r = await m.viaCallTool("ev.trigger-long-running-operation", { duration: 19, steps: 10 });
    expect(r).toMatchObject({ isError: true });
    expect(r.content).toMatch(
      /^MCP server "ev" did not finish trigger-long-running-operation within its total time limit of 4000 ms \(max_total_timeout_ms\)/,
    );
    expect(m.r.broker.mcp.get("ev")!.state).toBe("ready");
  });

  it("images and blob resources become blobs with a pointer; resources are listed and read through extended tools", async () => {
    await m.start({ mcp_servers: { ev: everything() } });
    await m.r.broker.mcp.settled();
    const img = await m.viaCallTool("ev.get-tiny-image");
    const ref = /stored as (blob:sha256:[0-9a-f]{64})/.exec(img.content)?.[1];
    expect(img.content).toMatch(/\[image: image\/png, \d+ bytes, stored as blob:sha256:/);
    // Exactly as the result says, with no find_tool first: a tool brokerd names in a result is callable.
    const blob = await m.r.call("call_tool", { name: "read_blob", arguments: { blob: ref } });
    expect(blob).toMatchObject({ decision: ToolDecision.ALLOWED, isError: false });
    expect(blob.content).toContain("data:image/png;base64,iVBOR");
    // Only in the session the result went to.
    const other = await m.r.call("call_tool", { name: "read_blob", arguments: { blob: ref } }, "s2");
    expect(other).toMatchObject({ decision: ToolDecision.DENIED, rule: "call_tool:undisclosed" });

    const found = await m.r.call("find_tool", { query: "read a resource from an MCP server" });
    expect(found.content).toMatch(/read_resource/);
    await m.r.call("find_tool", { query: "list resources" });
    const list = await m.r.call("call_tool", { name: "list_resources", arguments: { server: "ev" } });
    expect(list).toMatchObject({ decision: ToolDecision.ALLOWED, isError: false });
    const uri = /^(demo:\/\/resource\/static\/document\/\S+)/m.exec(list.content)?.[1];
    expect(uri).toBeDefined();
    const text = await m.r.call("call_tool", { name: "read_resource", arguments: { server: "ev", uri } });
    expect(text).toMatchObject({ decision: ToolDecision.ALLOWED, isError: false });
    expect(text.content.length).toBeGreaterThan(20);
    const bin = await m.r.call("call_tool", {
      name: "read_resource",
      arguments: { server: "ev", uri: "demo://resource/dynamic/blob/7" },
    });
    expect(bin.content).toMatch(/\[resource demo:\/\/resource\/dynamic\/blob\/7: .*stored as blob:sha256:/);
  });

  it("lists the server's prompt templates for the operator, with their arguments", async () => {
    await m.start({ mcp_servers: { ev: everything() } });
    await m.r.broker.mcp.settled();
    const prompts = await m.r.broker.mcp.prompts(new AbortController().signal);
    expect(prompts.length).toBeGreaterThan(0);
    expect(prompts.every((p) => p.server === "ev" && p.name !== "")).toBe(true);
    const withArgs = prompts.find((p) => p.arguments.some((a) => a.required));
    expect(withArgs, JSON.stringify(prompts)).toBeDefined();
    // Prompts are the operator's: nothing about them reaches the model's tool search.
    const found = await m.r.call("find_tool", { query: withArgs!.name });
    expect(found.content).not.toContain(`ev.${withArgs!.name}`);
  });

  it("shutdown leaves no server process", async () => {
    await m.start({ mcp_servers: { ev: everything(), ev2: everything() } });
    await m.r.broker.mcp.settled();
    const pids = m.r.broker.mcp.connections.flatMap((c) => c.pids());
    expect(pids).toHaveLength(2);
    await m.r.broker.close();
    for (const p of pids) expect(alive(p)).toBe(false);
  });
});

describe("server-everything over Streamable HTTP", () => {
  it("calls tools, and after the server restarts the next call re-initialises and succeeds at once", async () => {
    const port = await freePort();
    let srv = await startEverythingHttp(port, m.children);
    await m.start({
      mcp_servers: { evh: { transport: "http", url: `http://127.0.0.1:${port}/mcp`, risk: "read" } },
      policy: { defaults: { network: "allow" } },
      mcp_reconnect: { initial_ms: 50, max_ms: 200 },
    });
    await m.r.broker.mcp.settled();
    expect((await m.viaCallTool("evh.echo", { message: "one" })).content).toBe("Echo: one");
    srv.kill("SIGKILL");
    await new Promise((res) => srv.once("exit", res));
    srv = await startEverythingHttp(port, m.children);
    const again = await m.viaCallTool("evh.echo", { message: "two" });
    expect(again).toMatchObject({ isError: false, content: "Echo: two" });
  });
});
