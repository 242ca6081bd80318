// brokerd's MCP client against small probe servers, for what the npm servers
// cannot show: a hung start-up, SIGTERM ignored, the messages a server receives.
import { ToolDecision } from "@boxmaker/common";
import { describe, expect, it, vi } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { toolPath } from "../../../test/support/requirements.js";
import { alive, processesMentioning } from "../../../test/support/processes.js";
import { ECHO, PROBE, node, useMcpRig } from "./mcp-real-support.js";

// Sandboxed where bwrap exists; the probes test the client, not the sandbox.
const hasBwrap = toolPath("bwrap") !== undefined;
const m = useMcpRig();

describe("honest outcomes, start-up and shutdown (probe servers)", () => {
  it("approving a call whose server died reports failure, and the model is told", async () => {
    await m.start({
      mcp_servers: { fx: { transport: "stdio", command: node, args: [ECHO], sandbox: false, path_args: [] } },
      mcp_reconnect: { initial_ms: 60_000, max_ms: 60_000 },
    });
    await m.r.broker.mcp.settled();
    const staged = await m.viaCallTool("fx.echo", { text: "later" });
    expect(staged.decision).toBe(ToolDecision.STAGED);
    for (const p of m.r.broker.mcp.get("fx")!.pids()) process.kill(p, "SIGKILL");
    await vi.waitFor(() => expect(m.r.broker.mcp.get("fx")!.state).toBe("down"));
    const done = await m.r.broker.decideProposal(staged.proposalId, true, "");
    expect(done.state).toBe("failed");
    expect(done.result).toMatch(/^Not applied: fx\.echo failed: MCP server "fx" is unavailable/);
  });

  it("brokerd is ready while a server hangs at start-up; shutdown kills it mid-connect even when it ignores SIGTERM", async () => {
    const t0 = Date.now();
    await m.start({
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
    expect(m.r.broker.status().mcpServers).toContainEqual(expect.stringMatching(/^stuck: connecting/));
    // The healthy server's tools become findable while the stuck one is still connecting.
    await vi.waitFor(() => expect(m.r.broker.table.get("fx.echo")).toBeDefined(), { timeout: 10_000 });
    expect((await m.viaCallTool("fx.echo", { text: "hi" })).content).toBe("echo: hi");
    expect(m.r.broker.status().mcpServers).toContainEqual(expect.stringMatching(/^stuck: connecting/));
    const pids = m.r.broker.mcp.get("stuck")!.pids();
    expect(pids).toHaveLength(1);
    const c0 = Date.now();
    await m.r.broker.close();
    expect(Date.now() - c0).toBeLessThan(4000);
    for (const p of pids) expect(alive(p)).toBe(false);
    expect(processesMentioning("--hang-init").filter((p) => pids.includes(p))).toEqual([]);
  });

  it("no notifications/cancelled follows a normal call", async () => {
    await m.start(({ ws }) => ({
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
    await m.r.broker.mcp.settled();
    expect((await m.viaCallTool("probe.slow", { ms: 10 })).content).toBe("slept 10");
    expect((await m.viaCallTool("probe.slow", { ms: 200 })).content).toBe("slept 200");
    // One pipe, one order: a cancellation sent after the calls would reach the server before this ping does,
    // and the server logs each message before answering it.
    const client = await m.r.broker.mcp.get("probe")!.ready();
    await client!.ping();
    const log = join(m.r.ws, "msgs.jsonl");
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
