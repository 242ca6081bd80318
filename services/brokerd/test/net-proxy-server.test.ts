import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { NetProxyConfig, PolicyRule } from "../src/config-types.js";
import { scanSecrets } from "../src/secrets/scan.js";
import { NetProxy, type ConnectionRecord, type ProxyRun } from "../src/net-proxy/server.js";
import { tempDir } from "../../../test/support/tmp.js";

/** The proxy's server with real sockets and no sandbox: clients speak to its Unix socket as socat would. */
let echo: Server;
let echoPort: number;
beforeAll(async () => {
  echo = createServer({ allowHalfOpen: true }, (s) => s.pipe(s));
  await new Promise<void>((ok) => echo.listen(0, "127.0.0.1", ok));
  echoPort = (echo.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((ok) => echo.close(() => ok())));

const tmp = tempDir("bxnp-");
afterAll(() => tmp.cleanup());
let run: ProxyRun | undefined;
afterEach(async () => {
  await run?.close();
  run = undefined;
});

const rules: PolicyRule[] = [{ name: "echo", tool: "run_command", effect: "allow", hosts: ["echo.test"] }];
const base: NetProxyConfig = {
  enabled: true,
  socat_path: "/usr/bin/socat",
  port: 3128,
  allow_private_hosts: ["echo.test"],
  addresses: { "echo.test": "127.0.0.1" },
  connect_timeout_ms: 5_000,
  handshake_timeout_ms: 5_000,
  max_connections: 8,
};

async function open(config: Partial<NetProxyConfig> = {}) {
  const records: ConnectionRecord[] = [];
  const proxy = new NetProxy({
    config: { ...base, ...config },
    rules,
    dir: join(tmp.dir, "net"),
    record: (_run, _cmd, c) => records.push(c),
    findSecrets: (t) => scanSecrets(t),
  });
  run = await proxy.open("curl echo.test");
  return { run, records };
}

const client = (path: string) =>
  new Promise<Socket>((ok, fail) => {
    const s = connect({ path, allowHalfOpen: true });
    s.once("connect", () => ok(s));
    s.once("error", fail);
  });

/** Everything the socket sends until the proxy ends its side (the client is half-open, as curl's may be). */
const readAll = (s: Socket) =>
  new Promise<Buffer>((ok) => {
    const chunks: Buffer[] = [];
    s.on("data", (c: Buffer) => chunks.push(c));
    s.once("end", () => ok(Buffer.concat(chunks)));
    s.once("close", () => ok(Buffer.concat(chunks)));
  });

const until = async (cond: () => boolean) => {
  while (!cond()) await new Promise((r) => setImmediate(r));
};

describe("the proxy's server", () => {
  it("refuses a mapping to something that is not an IP address as a config error, naming the key", () => {
    expect(
      () =>
        new NetProxy({
          config: { ...base, addresses: { "a.test": "1.2" } },
          rules,
          dir: join(tmp.dir, "bad"),
          record: () => {},
          findSecrets: (t) => scanSecrets(t),
        }),
    ).toThrow(/^sandbox\.net_proxy\.addresses\.a\.test: "1\.2" is not an IP address$/);
  });

  it("tunnels CONNECT and SOCKS5 to an allowed host and counts every byte both ways", async () => {
    const { run: r, records } = await open();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 300_000 }), fc.boolean(), async (n, socks) => {
        const before = records.length;
        const payload = randomBytes(n);
        const s = await client(r.socketPath);
        const got = readAll(s);
        if (socks) {
          const name = Buffer.from("echo.test");
          s.write(Buffer.from([5, 1, 0]));
          s.write(
            Buffer.concat([Buffer.from([5, 1, 0, 3, name.length]), name, Buffer.from([echoPort >> 8, echoPort & 255])]),
          );
        } else s.write(`CONNECT echo.test:${echoPort} HTTP/1.1\r\nHost: echo.test\r\n\r\n`);
        s.end(payload);
        const out = await got;
        const greeting = socks ? 2 + 10 : "HTTP/1.1 200 Connection established\r\n\r\n".length;
        expect(out.length).toBe(greeting + n);
        expect(out.subarray(greeting).equals(payload)).toBe(true);
        await until(() => records.length > before);
        expect(records.at(-1)).toMatchObject({
          host: "echo.test",
          port: echoPort,
          address: "127.0.0.1",
          decision: "allowed",
          rule: "echo",
          bytes_up: n,
          bytes_down: n,
        });
      }),
      { numRuns: 25 },
    );
  });

  it("cuts a client that names its target one byte at a time, too slowly, and one that lies about a SOCKS name's length", async () => {
    const { run: r, records } = await open({ handshake_timeout_ms: 300 });
    const slow = await client(r.socketPath);
    const closed = readAll(slow);
    const head = Buffer.from(`CONNECT echo.test:${echoPort} HTTP/1.1\r\nHost: echo.test\r\n\r\n`);
    let i = 0;
    // Never finishes: one byte per 50 ms stops well short of the end within any bound the proxy would accept.
    const drip = setInterval(() => i < head.length - 4 && !slow.destroyed && slow.write(head.subarray(i, ++i)), 50);
    await closed;
    clearInterval(drip);
    const liar = await client(r.socketPath);
    const liarClosed = readAll(liar);
    liar.write(Buffer.from([5, 1, 0]));
    liar.write(Buffer.from([5, 1, 0, 3, 200, ...Buffer.from("echo.test")]));
    const answer = await liarClosed;
    expect([...answer]).toEqual([5, 0]);
    await until(() => records.length === 2);
    expect(records.map((c) => [c.rule, c.decision, c.bytes_up, c.bytes_down])).toEqual([
      ["net:handshake-timeout", "denied", 0, 0],
      ["net:handshake-timeout", "denied", 0, 0],
    ]);
  });

  it("refuses a host no rule allows, a private one the operator did not name, and garbage, before any upstream connection", async () => {
    let upstream = 0;
    const counting = createServer((s) => {
      upstream++;
      s.destroy();
    });
    await new Promise<void>((ok) => counting.listen(0, "127.0.0.1", ok));
    const p = (counting.address() as AddressInfo).port;
    const { run: r, records } = await open({
      addresses: { "echo.test": "127.0.0.1", "other.test": "127.0.0.1" },
      allow_private_hosts: [],
    });
    const ask = async (text: string | Buffer) => {
      const s = await client(r.socketPath);
      const got = readAll(s);
      s.end(text);
      return (await got).toString("latin1");
    };
    expect(await ask(`CONNECT other.test:${p} HTTP/1.1\r\n\r\n`)).toMatch(
      /^HTTP\/1\.1 403 [\s\S]*refused \(net:no-rule\)/,
    );
    expect(await ask(`GET http://echo.test:${p}/ HTTP/1.1\r\n\r\n`)).toMatch(
      /^HTTP\/1\.1 403 [\s\S]*refused \(net:private\): echo\.test resolves to 127\.0\.0\.1/,
    );
    expect(await ask(`GET http://0x7f.1:${p}/ HTTP/1.1\r\n\r\n`)).toMatch(/refused \(net:no-rule\): 127\.0\.0\.1:/);
    expect(await ask("\x16\x03\x01 TLS hello")).toMatch(/^HTTP\/1\.1 400 /);
    expect([
      ...Buffer.from(await ask(Buffer.from([5, 1, 0, 5, 1, 0, 4, ...Array(16).fill(0), 0, 80])), "latin1"),
    ]).toEqual([5, 0, 5, 2, 0, 1, 0, 0, 0, 0, 0, 0]);
    await until(() => records.length === 5);
    expect(records.map((c) => c.rule)).toEqual([
      "net:no-rule",
      "net:private",
      "net:no-rule",
      "net:bad-request",
      "net:no-rule",
    ]);
    expect(upstream).toBe(0);
    await new Promise<void>((ok) => counting.close(() => ok()));
  });

  it("holds at most max_connections at once, and ends the rest when the command ends", async () => {
    const { run: r, records } = await open({ max_connections: 3 });
    const held: Socket[] = [];
    for (let k = 0; k < 3; k++) {
      const s = await client(r.socketPath);
      s.write(`CONNECT echo.test:${echoPort} HTTP/1.1\r\n\r\n`);
      // Flowing, so the end the proxy sends at close is seen.
      s.resume();
      held.push(s);
    }
    await until(() => held.every((s) => s.bytesRead > 0));
    const extra = await client(r.socketPath);
    await readAll(extra);
    await until(() => records.length === 1);
    expect(records[0]).toMatchObject({ rule: "net:busy", decision: "denied" });
    const ends = held.map((s) => once(s, "end"));
    await r.close();
    run = undefined;
    await Promise.all(ends);
    expect(records.length).toBe(4);
    expect(records.slice(1).every((c) => c.decision === "allowed" && c.rule === "echo")).toBe(true);
  });

  it("abandons a DNS lookup still running when the command ends, instead of waiting out connect_timeout_ms", async () => {
    const asked: AbortSignal[] = [];
    const records: ConnectionRecord[] = [];
    const proxy = new NetProxy({
      // A limit no test waits for: only the command's end can finish this lookup.
      config: { ...base, allow_private_hosts: [], connect_timeout_ms: 3_600_000 },
      rules: [{ name: "silent", tool: "run_command", effect: "allow", hosts: ["silent.test"] }],
      dir: join(tmp.dir, "net-silent"),
      record: (_run, _cmd, c) => records.push(c),
      findSecrets: (t) => scanSecrets(t),
      resolve: (_host, signal) => {
        asked.push(signal);
        return new Promise(() => {}); // a DNS server that never answers
      },
    });
    const r = await proxy.open("curl silent.test");
    const s = await client(r.socketPath);
    const closed = readAll(s);
    s.write("CONNECT silent.test:443 HTTP/1.1\r\n\r\n");
    await until(() => asked.length === 1);
    await r.close();
    await closed;
    expect(asked[0]!.aborted).toBe(true);
    expect(records).toMatchObject([
      { host: "silent.test", rule: "net:unresolved", error: "the command ended while silent.test was being resolved" },
    ]);
  });
});
