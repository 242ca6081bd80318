import { ToolDecision } from "@boxmaker/common";
// Acceptance tests against the real MCP servers from npm (server-everything over
// stdio and Streamable HTTP, server-filesystem over stdio), plus a small probe
// server for what they cannot show (a hung start-up, SIGTERM ignored, the
// messages a server receives).
import { afterEach, describe, expect, it, vi } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { requires } from "../../../test/support/requirements.js";
import { rig, type Rig } from "./helpers.js";

const NM = fileURLToPath(new URL("../../../node_modules/@modelcontextprotocol/", import.meta.url));
const EVERYTHING = join(NM, "server-everything/dist/index.js");
const FILESYSTEM = join(NM, "server-filesystem/dist/index.js");
const PROBE = fileURLToPath(new URL("./fixtures/mcp-probe-server.mjs", import.meta.url));
const ECHO = fileURLToPath(new URL("./fixtures/mcp-stdio-server.mjs", import.meta.url));
const node = process.execPath;
const hasBwrap = requires("MCP stdio servers in the bwrap sandbox", ["bwrap"]);

let r: Rig | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  await r?.cleanup();
  r = undefined;
  for (const c of children.splice(0)) c.kill("SIGKILL");
});

async function viaCallTool(name: string, args: Record<string, unknown> = {}, session = "s1") {
  await r!.call("find_tool", { query: name }, session);
  return r!.call("call_tool", { name, arguments: args }, session);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Every live process whose command line mentions `marker` (a unique temp dir). */
function processesMentioning(marker: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, "utf8").includes(marker)) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}

describe.skipIf(!hasBwrap)("server-filesystem (stdio, sandboxed): the path policy and the sandbox hold", () => {
  it("reads inside the workspace; outside, secrets and denied paths are refused before the server sees them", async () => {
    r = await rig(
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
    await r.broker.mcp.settled();
    expect(r.broker.status().mcpServers[0]).toMatch(/^fs: ready \(\d+ tools/);
    // Risk from annotations: move_file is destructive, read_text_file read-only.
    expect(r.broker.table.get("fs.read_text_file")?.risk).toBe("read");
    expect(r.broker.table.get("fs.move_file")?.risk).toBe("write");
    expect(r.broker.table.get("fs.create_directory")?.risk).toBe("write");

    const ok = await viaCallTool("fs.read_text_file", { path: "a.txt" });
    expect(ok).toMatchObject({ decision: ToolDecision.ALLOWED, isError: false, content: "hello from the workspace" });
    const out = await viaCallTool("fs.read_text_file", { path: join(r.outside, "secret.txt") });
    expect(out).toMatchObject({ decision: ToolDecision.DENIED, rule: "path:outside-workspace" });
    const dotdot = await viaCallTool("fs.read_text_file", { path: "../outside/secret.txt" });
    expect(dotdot).toMatchObject({ decision: ToolDecision.DENIED, rule: "path:outside-workspace" });
    const env = await viaCallTool("fs.read_text_file", { path: ".env" });
    expect(env).toMatchObject({ decision: ToolDecision.DENIED, rule: "path:secret" });
    const priv = await viaCallTool("fs.read_text_file", { path: "private/p.txt" });
    expect(priv).toMatchObject({ decision: ToolDecision.DENIED, rule: "no-private" });
    const many = await viaCallTool("fs.read_multiple_files", { paths: ["a.txt", ".env"] });
    expect(many).toMatchObject({ decision: ToolDecision.DENIED, rule: "path:secret" });
    const move = await viaCallTool("fs.move_file", { source: "a.txt", destination: "b.txt" });
    expect(move).toMatchObject({ decision: ToolDecision.STAGED, rule: "default:write" });
    const moveOut = await viaCallTool("fs.move_file", { source: "a.txt", destination: join(r.outside, "x.txt") });
    expect(moveOut).toMatchObject({ decision: ToolDecision.DENIED, rule: "path:outside-workspace" });
    for (const c of [ok, out, env, priv, many]) expect(c.content).not.toMatch(/OUTSIDE-CONTENT|PRIVATE-CONTENT|TOKEN=/);
  });

  it("a sandboxed server reading with plain fs sees neither outside files nor the workspace's secrets", async () => {
    r = await rig(
      () => ({ mcp_servers: { probe: { transport: "stdio", command: node, args: [PROBE], path_args: [] } } }),
      ({ ws, outside }) => {
        writeFileSync(join(ws, "a.txt"), "inside");
        writeFileSync(join(ws, ".env"), "TOKEN=workspace-secret");
        writeFileSync(join(outside, "secret.txt"), "outside secret");
      },
    );
    await r.broker.mcp.settled();
    expect((await viaCallTool("probe.read_raw", { file: join(r.ws, "a.txt") })).content).toBe("inside");
    const out = await viaCallTool("probe.read_raw", { file: join(r.outside, "secret.txt") });
    expect(out.content).toBe("cannot read: ENOENT");
    const env = await viaCallTool("probe.read_raw", { file: join(r.ws, ".env") });
    expect(env.content).not.toContain("workspace-secret");
    const home = await viaCallTool("probe.read_raw", { file: "/etc/shadow" });
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
    r = await rig({
      mcp_servers: { ev: everything({ timeout_ms: 1500 }) },
      mcp_reconnect: { initial_ms: 50, max_ms: 200 },
    });
    await r.broker.mcp.settled();
    expect(r.broker.table.get("ev.trigger-long-running-operation")?.risk).toBe("read");
    const conn = r.broker.mcp.get("ev")!;
    const pids = conn.pids();
    await r.call("find_tool", { query: "ev.trigger-long-running-operation" });
    const run = (args: Record<string, unknown>) =>
      r!.call("call_tool", { name: "ev.trigger-long-running-operation", arguments: args });
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
    const sum = await viaCallTool("ev.get-sum", { a: 2, b: 3 });
    expect(sum.content).toMatch(/5/);
  });

  it("images and blob resources become blobs with a pointer; resources are listed and read through extended tools", async () => {
    r = await rig({ mcp_servers: { ev: everything() } });
    await r.broker.mcp.settled();
    const img = await viaCallTool("ev.get-tiny-image");
    const ref = /stored as (blob:sha256:[0-9a-f]{64})/.exec(img.content)?.[1];
    expect(img.content).toMatch(/\[image: image\/png, \d+ bytes, stored as blob:sha256:/);
    await r.call("find_tool", { query: "read blob" });
    const blob = await r.call("call_tool", { name: "read_blob", arguments: { blob: ref } });
    expect(blob.content).toContain("data:image/png;base64,iVBOR");

    const found = await r.call("find_tool", { query: "read a resource from an MCP server" });
    expect(found.content).toMatch(/read_resource/);
    await r.call("find_tool", { query: "list resources" });
    const list = await r.call("call_tool", { name: "list_resources", arguments: { server: "ev" } });
    expect(list).toMatchObject({ decision: ToolDecision.ALLOWED, isError: false });
    const uri = /^(demo:\/\/resource\/static\/document\/\S+)/m.exec(list.content)?.[1];
    expect(uri).toBeDefined();
    const text = await r.call("call_tool", { name: "read_resource", arguments: { server: "ev", uri } });
    expect(text).toMatchObject({ decision: ToolDecision.ALLOWED, isError: false });
    expect(text.content.length).toBeGreaterThan(20);
    const bin = await r.call("call_tool", {
      name: "read_resource",
      arguments: { server: "ev", uri: "demo://resource/dynamic/blob/7" },
    });
    expect(bin.content).toMatch(/\[resource demo:\/\/resource\/dynamic\/blob\/7: .*stored as blob:sha256:/);
  });

  it("lists the server's prompt templates for the operator, with their arguments", async () => {
    r = await rig({ mcp_servers: { ev: everything() } });
    await r.broker.mcp.settled();
    const prompts = await r.broker.mcp.prompts(new AbortController().signal);
    expect(prompts.length).toBeGreaterThan(0);
    expect(prompts.every((p) => p.server === "ev" && p.name !== "")).toBe(true);
    const withArgs = prompts.find((p) => p.arguments.some((a) => a.required));
    expect(withArgs, JSON.stringify(prompts)).toBeDefined();
    // Prompts are the operator's: nothing about them reaches the model's tool search.
    const found = await r.call("find_tool", { query: withArgs!.name });
    expect(found.content).not.toContain(`ev.${withArgs!.name}`);
  });

  it("shutdown leaves no server process", async () => {
    r = await rig({ mcp_servers: { ev: everything(), ev2: everything() } });
    await r.broker.mcp.settled();
    const pids = r.broker.mcp.connections.flatMap((c) => c.pids());
    expect(pids).toHaveLength(2);
    await r.broker.close();
    for (const p of pids) expect(alive(p)).toBe(false);
  });
});

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((res) => s.listen(0, "127.0.0.1", () => res()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((res) => s.close(() => res()));
  return port;
}

async function startEverythingHttp(port: number): Promise<ChildProcess> {
  const c = spawn(node, [EVERYTHING, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(c);
  await new Promise<void>((res, rej) => {
    const t = setTimeout(() => rej(new Error("server-everything did not start")), 15_000);
    c.stderr!.on("data", (d: Buffer) => {
      if (/listening on port/.test(d.toString())) {
        clearTimeout(t);
        res();
      }
    });
  });
  return c;
}

describe("server-everything over Streamable HTTP", () => {
  it("calls tools, and after the server restarts the next call re-initialises and succeeds at once", async () => {
    const port = await freePort();
    let srv = await startEverythingHttp(port);
    r = await rig({
      mcp_servers: { evh: { transport: "http", url: `http://127.0.0.1:${port}/mcp`, risk: "read" } },
      policy: { defaults: { network: "allow" } },
      mcp_reconnect: { initial_ms: 50, max_ms: 200 },
    });
    await r.broker.mcp.settled();
    expect((await viaCallTool("evh.echo", { message: "one" })).content).toBe("Echo: one");
    srv.kill("SIGKILL");
    await new Promise((res) => srv.once("exit", res));
    srv = await startEverythingHttp(port);
    const again = await viaCallTool("evh.echo", { message: "two" });
    expect(again).toMatchObject({ isError: false, content: "Echo: two" });
  });
});

describe("honest outcomes, start-up and shutdown (probe servers)", () => {
  it("approving a call whose server died reports failure, and the model is told", async () => {
    r = await rig({
      mcp_servers: { fx: { transport: "stdio", command: node, args: [ECHO], sandbox: false, path_args: [] } },
      mcp_reconnect: { initial_ms: 60_000, max_ms: 60_000 },
    });
    await r.broker.mcp.settled();
    const staged = await viaCallTool("fx.echo", { text: "later" });
    expect(staged.decision).toBe(ToolDecision.STAGED);
    for (const p of r.broker.mcp.get("fx")!.pids()) process.kill(p, "SIGKILL");
    await vi.waitFor(() => expect(r!.broker.mcp.get("fx")!.state).toBe("down"));
    const done = await r.broker.decideProposal(staged.proposalId, true, "");
    expect(done.state).toBe("failed");
    expect(done.result).toMatch(/^Not applied: fx\.echo failed: MCP server "fx" is unavailable/);
  });

  it("brokerd is ready while a server hangs at start-up; shutdown kills it mid-connect even when it ignores SIGTERM", async () => {
    const t0 = Date.now();
    r = await rig({
      mcp_servers: {
        stuck: {
          transport: "stdio",
          command: node,
          args: [PROBE, "--hang-init", "--ignore-term"],
          sandbox: false,
          connect_timeout_ms: 30_000,
        },
        fx: { transport: "stdio", command: node, args: [ECHO], sandbox: false, risk: "read", path_args: [] },
      },
    });
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(r.broker.status().mcpServers).toContainEqual(expect.stringMatching(/^stuck: connecting/));
    // The healthy server's tools become findable while the stuck one is still connecting.
    await vi.waitFor(() => expect(r!.broker.table.get("fx.echo")).toBeDefined(), { timeout: 10_000 });
    expect((await viaCallTool("fx.echo", { text: "hi" })).content).toBe("echo: hi");
    expect(r.broker.status().mcpServers).toContainEqual(expect.stringMatching(/^stuck: connecting/));
    const pids = r.broker.mcp.get("stuck")!.pids();
    expect(pids).toHaveLength(1);
    const c0 = Date.now();
    await r.broker.close();
    expect(Date.now() - c0).toBeLessThan(4000);
    for (const p of pids) expect(alive(p)).toBe(false);
    expect(processesMentioning("--hang-init").filter((p) => pids.includes(p))).toEqual([]);
  });

  it("no notifications/cancelled follows a normal call", async () => {
    r = await rig(({ ws }) => ({
      mcp_servers: {
        probe: {
          transport: "stdio",
          command: node,
          args: [PROBE, "--log", join(ws, "msgs.jsonl")],
          sandbox: hasBwrap,
          risk: "read",
          path_args: [],
        },
      },
    }));
    await r.broker.mcp.settled();
    expect((await viaCallTool("probe.slow", { ms: 10 })).content).toBe("slept 10");
    expect((await viaCallTool("probe.slow", { ms: 200 })).content).toBe("slept 200");
    // One pipe, one order: a cancellation sent after the calls would reach the server before this ping does,
    // and the server logs each message before answering it.
    const client = await r.broker.mcp.get("probe")!.ready();
    await client!.ping();
    const log = join(r.ws, "msgs.jsonl");
    expect(existsSync(log)).toBe(true);
    const methods = readFileSync(log, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l).method as string);
    expect(methods.at(-1)).toBe("ping");
    expect(methods.filter((m) => m === "tools/call")).toHaveLength(2);
    expect(methods).not.toContain("notifications/cancelled");
    // Every call asks for progress, so long tools can extend their deadline.
    const calls = readFileSync(log, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
      .filter((m) => m.method === "tools/call");
    for (const c of calls) expect(c.params._meta.progressToken).toBeDefined();
  });
});
