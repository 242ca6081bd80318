// fetch_url and the network proxy asked about the same destinations, each through its
// own front door: fetch_url as a call through a real broker, the proxy over its Unix
// socket by HTTP CONNECT and by SOCKS5. Run by outbound-verdicts.test.ts in a network
// namespace of its own (bwrap --unshare-net): a destination the policy lets through
// then fails to connect there (no route; nothing listens on that loopback), and one it
// refuses is refused before any connection. Nothing leaves the machine.
import { isIP, connect, type Socket } from "node:net";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import type { NetProxyConfig } from "../../src/config-types.js";
import { NetProxy, type ConnectionRecord } from "../../src/net-proxy/server.js";
import type { Resolver } from "../../src/policy/destination.js";
import { scanSecrets } from "../../src/secrets/scan.js";
import { grepBlob, readBlob } from "../../src/tools/blob-tools.js";
import { makeFetchUrl } from "../../src/tools/fetch-url.js";
import { rig } from "../helpers.js";

export interface VerdictRun {
  /** Hosts as a URL's authority writes them (IPv6 in brackets), each one case. */
  hosts: string[];
  /** What the one DNS both ask answers, by canonical name; a name it lacks fails to resolve. */
  dns: Record<string, string[]>;
  /** Every host in both allow_private_hosts lists, or none. */
  allowAll: boolean;
}

/** What became of a destination: let through, or refused and why; anything else is named as it came. */
export type Verdict = "passed" | "private" | "unresolved" | "no-host" | `other: ${string}`;

export interface Verdicts {
  fetch: Verdict[];
  connect: Verdict[];
  socks: Verdict[];
}

const PORT = 9;

/** fetch_url's answer in words: each refusal has its sentence, and what passed the policy failed to connect. */
function fetchVerdict(text: string): Verdict {
  if (/resolves to \S+, a private, loopback or link-local address/.test(text)) return "private";
  if (/cannot resolve |resolving \S+ took longer than/.test(text)) return "unresolved";
  if (/is not a host name or address|is not a URL/.test(text)) return "no-host";
  if (/^fetching \S+ failed: /.test(text)) return "passed";
  return `other: ${text.slice(0, 200)}`;
}

/** The proxy's record of the connection: its rule, or allowed (then the connect failed in the namespace). */
function proxyVerdict(c: ConnectionRecord): Verdict {
  if (c.decision === "allowed") return "passed";
  if (c.rule === "net:private") return "private";
  if (c.rule === "net:unresolved") return "unresolved";
  // net:bad-request: the request named no host the parser could read.
  if (c.rule === "net:bad-host" || c.rule === "net:bad-request") return "no-host";
  return `other: ${c.rule} ${c.error ?? ""}`;
}

function exchange(path: string, bytes: Buffer): Promise<void> {
  return new Promise((ok) => {
    const s: Socket = connect({ path, allowHalfOpen: true });
    s.on("data", () => {});
    s.once("error", () => ok());
    s.once("close", () => ok());
    s.end(bytes);
  });
}

function socksRequest(host: string): Buffer {
  const name = Buffer.from(host, "latin1");
  return Buffer.concat([Buffer.from([5, 1, 0, 5, 1, 0, 3, name.length]), name, Buffer.from([PORT >> 8, PORT & 255])]);
}

async function outboundVerdicts(run: VerdictRun): Promise<Verdicts> {
  const resolve: Resolver = async (host) => {
    const answer = run.dns[host];
    if (!answer) throw new Error(`ENOTFOUND ${host}`);
    return answer.map((address) => ({ address, family: isIP(address) }));
  };
  const allow = run.allowAll ? run.hosts : [];
  const r = await rig({
    fetch_url: { timeout_ms: 10_000, allow_private_hosts: allow },
    policy: { rules: [{ tool: "fetch_url", effect: "allow" }] },
  });
  const records: ConnectionRecord[] = [];
  const config: NetProxyConfig = {
    enabled: true,
    socat_path: "/usr/bin/socat",
    port: 3128,
    allow_private_hosts: allow,
    addresses: {},
    connect_timeout_ms: 10_000,
    handshake_timeout_ms: 10_000,
    max_connections: 8,
  };
  const proxy = new NetProxy({
    config,
    rules: [{ name: "all", tool: "run_command", effect: "allow", hosts: ["*"] }],
    dir: join(r.dir, "net"),
    record: (_run, _cmd, c) => records.push(c),
    findSecrets: (t) => scanSecrets(t),
    resolve,
  });
  const pr = await proxy.open("curl");
  const through = async (bytes: Buffer) => {
    const before = records.length;
    await exchange(pr.socketPath, bytes);
    while (records.length === before) await new Promise((ok) => setImmediate(ok));
    return proxyVerdict(records.at(-1)!);
  };
  try {
    r.broker.table.replaceOrigin("builtin", [readBlob, grepBlob, makeFetchUrl({ resolve })]);
    await r.call("find_tool", { query: "fetch a web page url" });
    const out: Verdicts = { fetch: [], connect: [], socks: [] };
    for (const host of run.hosts) {
      const res = await r.call("call_tool", { name: "fetch_url", arguments: { url: `http://${host}:${PORT}/` } });
      out.fetch.push(fetchVerdict(res.content));
      out.connect.push(await through(Buffer.from(`CONNECT ${host}:${PORT} HTTP/1.1\r\nHost: x\r\n\r\n`, "latin1")));
      out.socks.push(await through(socksRequest(host.replace(/^\[(.*)\]$/, "$1"))));
    }
    return out;
  } finally {
    await pr.close();
    await r.cleanup();
  }
}

/** Run as the child: the run on stdin, the verdicts on stdout. */
export async function childMain(): Promise<void> {
  const run = JSON.parse(readFileSync(0, "utf8")) as VerdictRun;
  process.stdout.write(JSON.stringify(await outboundVerdicts(run)));
}
