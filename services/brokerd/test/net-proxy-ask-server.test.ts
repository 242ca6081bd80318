import { readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";
import { join } from "node:path";
import { ToolDecision } from "@boxmaker/common";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Broker } from "../src/broker.js";
import type { NetProxyConfig, PolicyRule } from "../src/config-types.js";
import { decideNetworkAsk } from "../src/net-proxy/grant.js";
import { scanSecrets } from "../src/secrets/scan.js";
import { NetProxy, type ConnectionRecord, type ProxyRun } from "../src/net-proxy/server.js";
import { ProposalStore } from "../src/staging.js";
import { rig, silent, type Rig } from "./helpers.js";
import { requires, toolPath } from "../../../test/support/requirements.js";
import { tempDir } from "../../../test/support/tmp.js";

/**
 * ask for the network proxy with real sockets: the first connection to a host an ask
 * rule names is refused at once with the proposal's id, the person's approval grants
 * host:port to that session, and the same request then passes.
 */
let web: Server;
let port = 0;
let served = 0;
beforeAll(async () => {
  web = createServer((req, res) => {
    served++;
    res.end(`served ${req.url} to the sandbox\n`);
  });
  await new Promise<void>((ok) => web.listen(0, "127.0.0.1", ok));
  port = (web.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((ok) => web.close(() => ok())));

const rules: PolicyRule[] = [
  { name: "ask-test", tool: "run_command", effect: "ask", hosts: ["ask.test", "no.test", "private.test"] },
  { name: "no-no", tool: "run_command", effect: "deny", hosts: ["no.test"] },
];
const net: NetProxyConfig = {
  enabled: true,
  socat_path: "/usr/bin/socat",
  port: 3128,
  // The test's own 127.0.0.1, reachable only because the operator says so.
  allow_private_hosts: ["ask.test", "no.test"],
  addresses: { "ask.test": "127.0.0.1", "no.test": "127.0.0.1", "private.test": "10.0.0.1" },
  connect_timeout_ms: 5_000,
  handshake_timeout_ms: 5_000,
  max_connections: 8,
};

const exchange = (path: string, bytes: string | Buffer) =>
  new Promise<string>((ok, fail) => {
    const s: Socket = connect({ path, allowHalfOpen: true });
    const chunks: Buffer[] = [];
    s.on("data", (c: Buffer) => chunks.push(c));
    s.once("error", fail);
    s.once("close", () => ok(Buffer.concat(chunks).toString("latin1")));
    s.once("connect", () => s.end(bytes));
  });

const socksTo = (host: string, p: number) => {
  const name = Buffer.from(host);
  return Buffer.concat([Buffer.from([5, 1, 0, 5, 1, 0, 3, name.length]), name, Buffer.from([p >> 8, p & 255])]);
};

const until = async (cond: () => boolean) => {
  while (!cond()) await new Promise((r) => setImmediate(r));
};

describe("the proxy's server under an ask rule", () => {
  const tmp = tempDir("bxnq-");
  afterAll(() => tmp.cleanup());
  let run: ProxyRun | undefined;
  afterEach(async () => {
    await run?.close();
    run = undefined;
  });

  it("stages one proposal per host:port, refuses at once over HTTP and SOCKS naming it, and passes once granted", async () => {
    const store = new ProposalStore(join(tmp.dir, "proposals"));
    const records: ConnectionRecord[] = [];
    const proxy = new NetProxy({
      config: net,
      rules,
      dir: join(tmp.dir, "net"),
      proposals: store,
      record: (_r, _c, c) => records.push(c),
      findSecrets: (t) => scanSecrets(t),
    });
    run = await proxy.open("curl http://ask.test/", { session: "s1", callId: "c1" });
    const before = served;
    const first = await exchange(run.socketPath, `CONNECT ask.test:${port} HTTP/1.1\r\n\r\n`);
    const id = /proposal (p-[0-9a-z]+-[0-9a-f]+)/.exec(first)?.[1];
    expect(first).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
    expect(first).toContain(
      `boxmaker proxy: refused (ask-test): ask.test:${port} needs a person's approval: proposal ${id} was staged for it. ` +
        `Once approved, ask.test:${port} is allowed for this session's commands; re-run the command then\n`,
    );
    // The same host while it waits: named again, not staged again, over every protocol.
    const socks = await exchange(run.socketPath, socksTo("ask.test", port));
    expect([...Buffer.from(socks, "latin1")]).toEqual([5, 0, 5, 2, 0, 1, 0, 0, 0, 0, 0, 0]);
    expect(await exchange(run.socketPath, `GET http://ask.test:${port}/x HTTP/1.1\r\n\r\n`)).toContain(
      `proposal ${id} still waits for it`,
    );
    // A deny wins over ask; a private address is refused without asking anyone.
    expect(await exchange(run.socketPath, `CONNECT no.test:${port} HTTP/1.1\r\n\r\n`)).toContain("refused (no-no)");
    expect(await exchange(run.socketPath, `CONNECT private.test:443 HTTP/1.1\r\n\r\n`)).toMatch(/^HTTP\/1\.1 403 /);
    const pending = store.list({ sessionId: "s1" });
    expect(pending.map((p) => [p.id, p.tool, p.network])).toEqual([
      [id, "network", { host: "ask.test", port, command: "curl http://ask.test/" }],
    ]);
    expect(served).toBe(before);
    decideNetworkAsk(store, rules, pending[0]!, pending[0]!.network!, true, "");
    expect(
      await exchange(run.socketPath, `GET http://ask.test:${port}/again HTTP/1.1\r\nHost: ask.test\r\n\r\n`),
    ).toContain("served /again to the sandbox");
    expect(served).toBe(before + 1);
    await until(() => records.length === 6);
    expect(records.map((c) => [c.decision, c.rule, c.host, c.proposal])).toEqual([
      ["staged", "ask-test", "ask.test", id],
      ["denied", "ask-test", "ask.test", id],
      ["denied", "ask-test", "ask.test", id],
      ["denied", "no-no", "no.test", undefined],
      ["denied", "net:private", "private.test", undefined],
      ["allowed", `grant:${id}`, "ask.test", id],
    ]);
  });

  it("refuses ask as before for a command no session runs (a hook's)", async () => {
    const store = new ProposalStore(join(tmp.dir, "hook-proposals"));
    const proxy = new NetProxy({
      config: net,
      rules,
      dir: join(tmp.dir, "net2"),
      proposals: store,
      record: () => {},
      findSecrets: (t) => scanSecrets(t),
    });
    run = await proxy.open("curl http://ask.test/");
    expect(await exchange(run.socketPath, `CONNECT ask.test:${port} HTTP/1.1\r\n\r\n`)).toContain(
      "runs for no session a person could be asked in",
    );
    expect(store.list({ includeDecided: true })).toEqual([]);
  });
});

const needs = requires("run_command's network ask through the allowlist proxy", ["bwrap", "socat", "curl"]);

describe.skipIf(!needs)("run_command under an ask rule, approved through the broker", () => {
  let r: Rig | undefined;
  afterEach(async () => {
    await r?.cleanup();
    r = undefined;
  });

  it("refuses the first curl with the proposal's id, passes it after DecideProposal, keeps the grant across a restart, and audits each", async () => {
    r = await rig({
      sandbox: {
        net_proxy: {
          enabled: true,
          socat_path: toolPath("socat") ?? "/nonexistent/socat",
          addresses: { "ask.test": "127.0.0.1" },
          allow_private_hosts: ["ask.test"],
        },
      },
      policy: {
        rules: [
          { name: "cmds", tool: "run_command", effect: "allow" },
          { name: "ask-test", tool: "run_command", effect: "ask", hosts: ["ask.test"] },
        ],
      },
    });
    const command = `curl -sS http://ask.test:${port}/pkg; curl -sS https://ask.test:${port}/ 2>&1; echo end`;
    const first = await r.call("run_command", { command }, "s1");
    // The command ran; the person is asked about the host after.
    expect(first.decision).toBe(ToolDecision.ALLOWED);
    const id = first.proposalId;
    expect(id).toMatch(/^p-/);
    expect(first.content).toContain(
      `boxmaker proxy: refused (ask-test): ask.test:${port} needs a person's approval: proposal ${id}`,
    );
    expect(first.content).toMatch(/CONNECT tunnel failed, response 403/);
    expect(first.content).toContain(
      `[network: ask.test:${port} refused until a person approves proposal ${id} (ask-test)`,
    );
    const listed = r.broker.listProposals("s1", false);
    expect(listed.map((p) => [p.id, p.tool, p.preview.split("\n")[0]])).toEqual([
      [id, "network", `network: ask.test:${port} for \`${command.slice(0, 59)}…\``],
    ]);
    // Another session's command is its own person's question.
    const other = await r.call("run_command", { command: `curl -sS http://ask.test:${port}/` }, "s2");
    expect(other.proposalId).not.toBe(id);
    const decided = await r.broker.decideProposal(id, true, "");
    expect(decided).toMatchObject({ state: "applied", result: expect.stringContaining("allowed for this session") });
    const second = await r.call("run_command", { command }, "s1");
    expect(second.content).toContain("served /pkg to the sandbox");
    expect(second.proposalId).toBe("");
    // A restarted brokerd reads the grant back from state_dir.
    await r.broker.close();
    const restarted = await Broker.open(r.config, { log: silent });
    const dir = r.dir;
    r = undefined;
    try {
      const third = await restarted.call({
        sessionId: "s1",
        callId: "c-after",
        name: "run_command",
        argumentsJson: JSON.stringify({ command: `curl -sS http://ask.test:${port}/after` }),
      });
      expect(third.content).toContain("served /after to the sandbox");
    } finally {
      await restarted.close();
    }
    const lines = readFileSync(join(dir, "state", "audit.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { kind: string; session: string; decision: string; rule: string; proposal?: string })
      .filter((l) => l.kind === "connection" || l.kind === "proposal");
    rmSync(dir, { recursive: true, force: true });
    expect(lines.map((l) => [l.kind, l.session, l.decision, l.rule, l.proposal])).toEqual([
      ["connection", "s1", "staged", "ask-test", id],
      ["connection", "s1", "denied", "ask-test", id],
      ["connection", "s2", "staged", "ask-test", other.proposalId],
      ["proposal", "s1", "approved", "ask-test", id],
      ["connection", "s1", "allowed", `grant:${id}`, id],
      ["connection", "s1", "allowed", `grant:${id}`, id],
      ["connection", "s1", "allowed", `grant:${id}`, id],
    ]);
  });
});
