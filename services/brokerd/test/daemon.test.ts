import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BrokerService, RpcError, Status, ToolDecision, createClient } from "@boxmaker/common";
import { FakeNotifySocket } from "../../../test/support/notify-socket.js";
import { tempDir } from "../../../test/support/tmp.js";
import { requires } from "../../../test/support/requirements.js";
import { bwrapPath } from "./helpers.js";

// The daemon reports readiness to a notify socket that python3 holds, and runs commands in bwrap.
const haveTools = requires("brokerd as a process (sd_notify, sandbox)", ["python3", "bwrap"]);

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const MAIN = join(ROOT, "services/brokerd/dist/main.js");
const FIXTURE = fileURLToPath(new URL("./fixtures/tools-default.json", import.meta.url));

const t = tempDir("bxd-");
const ws = join(t.dir, "ws");

beforeAll(() => {
  // End-to-end tests run the built daemon; tsc -b is incremental, so this is cheap when up to date.
  execFileSync("npx", ["tsc", "-b", "services/brokerd"], { cwd: ROOT, stdio: "inherit" });
  mkdirSync(ws);
});
afterAll(() => t.cleanup());

function writeConfig(name: string, data: unknown): string {
  const p = join(t.dir, `${name}.json`);
  writeFileSync(p, JSON.stringify(data));
  return p;
}

interface Running {
  proc: ChildProcess;
  sock: string;
  notify: FakeNotifySocket;
  stderr: () => string;
}

/** Tool settings only, as the default config: the array must equal the fixture. */
async function startDaemon(name: string): Promise<Running> {
  const sock = join(t.dir, `${name}.sock`);
  const config = writeConfig(name, {
    socket: sock,
    state_dir: join(t.dir, `${name}-state`),
    workspace_roots: [ws],
    log_level: "warn",
    sandbox: { bwrap_path: bwrapPath },
  });
  const notify = new FakeNotifySocket(join(t.dir, `${name}-notify.sock`));
  await notify.start();
  const proc = spawn(process.execPath, [MAIN, "--config", config], {
    env: { ...process.env, NOTIFY_SOCKET: notify.path },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  return { proc, sock, notify, stderr: () => err };
}

async function stop(d: Running): Promise<number | null> {
  if (d.proc.exitCode === null) {
    d.proc.kill("SIGTERM");
    await once(d.proc, "exit");
  }
  await d.notify.stop();
  return d.proc.exitCode;
}

describe.skipIf(!haveTools)("brokerd as a process", () => {
  it("sends READY=1 only once its socket answers calls, and SIGTERM leaves no socket", async () => {
    const d = await startDaemon("a");
    await d.notify.waitFor("READY=1");
    // No waitForReady and a short deadline: at READY the socket must already serve.
    const c = createClient(BrokerService, d.sock);
    const st = await c.brokerStatus({}, { timeoutMs: 2000 });
    expect(st.coreTools).toBe(10);
    expect(st.sandbox).toMatch(/^bwrap/);
    c.close();
    expect(await stop(d)).toBe(0);
    expect(existsSync(d.sock)).toBe(false);
  });

  it("serves the same tools array bytes from two separate processes, equal to the fixture", async () => {
    const a = await startDaemon("b1");
    const b = await startDaemon("b2");
    await Promise.all([a.notify.waitFor("READY=1"), b.notify.waitFor("READY=1")]);
    const ca = createClient(BrokerService, a.sock);
    const cb = createClient(BrokerService, b.sock);
    const [ta, tb, ta2] = [await ca.getTools({}), await cb.getTools({}), await ca.getTools({})];
    expect(ta.toolsJson).toBe(tb.toolsJson);
    expect(ta2.toolsJson).toBe(ta.toolsJson);
    expect(`${ta.toolsJson}\n`).toBe(readFileSync(FIXTURE, "utf8"));
    expect(ta.toolsSha256).toBe(tb.toolsSha256);
    expect(ta.coreToolNames).toEqual([
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
    ca.close();
    cb.close();
    await Promise.all([stop(a), stop(b)]);
  });

  it("exits non-zero with one stderr line naming the bad key of a malformed config", async () => {
    for (const [data, key] of [
      [{ sandbox: { mod: "bwrap" } }, "sandbox.mod"],
      [{ policy: { defaults: { write: "sometimes" } } }, "policy.defaults.write"],
    ] as const) {
      const proc = spawn(process.execPath, [MAIN, "--config", writeConfig("bad", data)], {
        stdio: ["ignore", "ignore", "pipe"],
      });
      let err = "";
      proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
      const [code] = (await once(proc, "exit")) as [number];
      expect(code).not.toBe(0);
      expect(err.trimEnd().split("\n")).toHaveLength(1);
      expect(err).toContain(`"${key}"`);
    }
  });
});

describe.skipIf(!haveTools)("BrokerService over a real Unix socket", () => {
  const mk = (sock: string) => createClient(BrokerService, sock);
  let d: Running;
  let c: ReturnType<typeof mk>;

  beforeAll(async () => {
    d = await startDaemon("svc");
    await d.notify.waitFor("READY=1");
    c = mk(d.sock);
  });
  afterAll(async () => {
    c.close();
    await stop(d);
  });

  it("CallTool runs an allowed read and refuses a traversal", async () => {
    writeFileSync(join(ws, "hello.txt"), "hello\n");
    const ok = await c.callTool({
      sessionId: "s",
      callId: "1",
      name: "read_file",
      argumentsJson: '{"path":"hello.txt"}',
    });
    expect(ok).toMatchObject({
      decision: ToolDecision.ALLOWED,
      content: "hello",
      isError: false,
      rule: "default:read",
      resolvedName: "read_file",
    });
    expect(ok.durationMs).toBeGreaterThan(0);
    const no = await c.callTool({
      sessionId: "s",
      callId: "2",
      name: "read_file",
      argumentsJson: '{"path":"../../etc/passwd"}',
    });
    expect(no).toMatchObject({ decision: ToolDecision.DENIED, isError: true, rule: "path:outside-workspace" });
  });

  it("stages a write, lists it, and applies it when approved", async () => {
    const res = await c.callTool({
      sessionId: "p",
      callId: "w1",
      name: "write_file",
      argumentsJson: '{"path":"out/new.txt","content":"made\\n"}',
    });
    expect(res.decision).toBe(ToolDecision.STAGED);
    expect(existsSync(join(ws, "out/new.txt"))).toBe(false);
    const list = await c.listProposals({ sessionId: "p" });
    expect(list.proposals).toHaveLength(1);
    expect(list.proposals[0]).toMatchObject({
      id: res.proposalId,
      tool: "write_file",
      state: "pending",
      callId: "w1",
      rule: "default:write",
    });
    expect(list.proposals[0]!.preview).toContain("+made");
    const done = await c.decideProposal({ id: res.proposalId, approve: true });
    expect(done.proposal).toMatchObject({ state: "applied" });
    expect(readFileSync(join(ws, "out/new.txt"), "utf8")).toBe("made\n");
    expect((await c.listProposals({ sessionId: "p" })).proposals).toEqual([]);
    expect((await c.listProposals({ sessionId: "p", includeDecided: true })).proposals[0]!.state).toBe("applied");
    const again = await c.decideProposal({ id: res.proposalId, approve: true }).catch((e: unknown) => e as RpcError);
    expect(again).toBeInstanceOf(RpcError);
    expect((again as RpcError).status).toBe(Status.FAILED_PRECONDITION);
    const missing = await c.decideProposal({ id: "p-nope", approve: false }).catch((e: unknown) => e as RpcError);
    expect((missing as RpcError).status).toBe(Status.NOT_FOUND);
  });

  it("SearchTools finds extended tools without disclosing them", async () => {
    const s = await c.searchTools({ query: "read a stored blob", limit: 2 });
    expect(s.core.map((t) => t.name)).toContain("find_tool");
    expect(s.matches[0]).toMatchObject({ name: "read_blob", risk: "read", core: false });
    expect(JSON.parse(s.matches[0]!.parametersJson)).toMatchObject({ required: ["blob"] });
    const call = await c.callTool({
      sessionId: "z",
      callId: "1",
      name: "call_tool",
      argumentsJson: '{"name":"read_blob","arguments":{"blob":"x"}}',
    });
    expect(call.rule).toBe("call_tool:undisclosed");
  });
});
