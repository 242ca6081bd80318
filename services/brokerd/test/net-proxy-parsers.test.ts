import fc from "fast-check";
import ipaddr from "ipaddr.js";
import { describe, expect, it } from "vitest";
import { connectionDecision } from "../src/net-proxy/allow.js";
import {
  canonicalDestination,
  DestinationRefused,
  destinationAddress,
  type Resolver,
} from "../src/policy/destination.js";
import { MAX_HEAD_BYTES, parseAuthority, parseHttpProxyHead } from "../src/net-proxy/http-request.js";
import { parseSocksGreeting, parseSocksRequest, SOCKS } from "../src/net-proxy/socks5.js";
import type { PolicyRule } from "../src/config-types.js";

const RUNS = 500;
const b = (s: string) => Buffer.from(s, "latin1");

describe("HTTP proxy request heads", () => {
  it("never throws on arbitrary bytes, and only a complete CRLF head is ever accepted", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        const v = parseHttpProxyHead(Buffer.from(bytes));
        if (v.kind === "connect" || v.kind === "forward") expect(Buffer.from(bytes).includes("\r\n\r\n")).toBe(true);
      }),
      { numRuns: RUNS * 4 },
    );
  });

  const hostArb = fc.oneof(
    fc.domain(),
    fc.ipV4().map(String),
    fc.ipV6().map((h) => `[${h}]`),
  );
  const portArb = fc.integer({ min: 1, max: 65535 });

  it("reads CONNECT host:port whole, and every proper prefix is incomplete", () => {
    fc.assert(
      fc.property(hostArb, portArb, fc.uint8Array({ maxLength: 40 }), (host, port, tail) => {
        const head = b(`CONNECT ${host}:${port} HTTP/1.1\r\nHost: ${host}:${port}\r\nUser-Agent: t\r\n\r\n`);
        const all = Buffer.concat([head, tail]);
        const v = parseHttpProxyHead(all);
        expect(v.kind).toBe("connect");
        if (v.kind !== "connect") return;
        expect(v.host).toBe(host.replace(/^\[|\]$/g, ""));
        expect(v.port).toBe(port);
        expect([...v.rest]).toEqual([...tail]);
        for (let cut = 0; cut < head.length; cut += 7)
          expect(parseHttpProxyHead(head.subarray(0, cut)).kind).toBe("incomplete");
      }),
      { numRuns: RUNS },
    );
  });

  it("refuses malformed CONNECT lines: no port, port 0 or past 65535, userinfo, a path, signs, spaces", () => {
    const bad = [
      "example.org",
      "example.org:",
      "example.org:0",
      "example.org:65536",
      "example.org:+443",
      "example.org:-1",
      "example.org:4 43",
      "user@example.org:443",
      "user:pw@example.org:443",
      "example.org:443/path",
      "http://example.org:443",
      "[::1]",
      "[::1:443",
      "::1:443",
      "[zz::1]:443",
      "exa\\mple.org:443",
      ":443",
    ];
    for (const t of bad) {
      expect(parseAuthority(t), t).toBeUndefined();
      const v = parseHttpProxyHead(b(`CONNECT ${t} HTTP/1.1\r\n\r\n`));
      expect(v.kind, t).toBe("bad");
    }
    fc.assert(
      fc.property(fc.string({ unit: "binary-ascii", maxLength: 40 }), (junk) => {
        const a = parseAuthority(junk);
        if (a) {
          expect(a.port).toBeGreaterThanOrEqual(1);
          expect(a.port).toBeLessThanOrEqual(65535);
          expect(a.host).not.toMatch(/[@/\s]/);
        }
      }),
      { numRuns: RUNS * 4 },
    );
  });

  it("refuses heads that could be read two ways: bare CR or LF, NUL, header names with spaces, HTTP/2 lines, lower-case methods", () => {
    for (const h of [
      "CONNECT a.test:1 HTTP/1.1\r\nX: a\nInjected: b\r\n\r\n",
      "CONNECT a.test:1 HTTP/1.1\r\nX: a\rb\r\n\r\n",
      "CONNECT a.test:1 HTTP/1.1\r\nX: a\0\r\n\r\n",
      "CONNECT a.test:1 HTTP/1.1\r\nBad Name: a\r\n\r\n",
      "CONNECT a.test:1 HTTP/2.0\r\n\r\n",
      "connect a.test:1 HTTP/1.1\r\n\r\n",
      "CONNECT  a.test:1 HTTP/1.1\r\n\r\n",
      "GET /relative HTTP/1.1\r\nHost: a.test\r\n\r\n",
      "GET https://a.test/ HTTP/1.1\r\n\r\n",
    ])
      expect(parseHttpProxyHead(b(h)).kind, JSON.stringify(h)).toBe("bad");
  });

  it("bounds the head at 16 KiB, complete or not", () => {
    const long = `CONNECT a.test:1 HTTP/1.1\r\nX: ${"a".repeat(MAX_HEAD_BYTES)}`;
    expect(parseHttpProxyHead(b(long))).toEqual({ kind: "bad", why: "request head over 16 KiB" });
    expect(parseHttpProxyHead(b(`${long}\r\n\r\n`)).kind).toBe("bad");
  });

  it("forwards an absolute-form request as origin-form to the host the URL names, without proxy credentials", () => {
    fc.assert(
      fc.property(
        fc.domain(),
        fc.option(portArb, { nil: undefined }),
        fc.webPath(),
        fc.option(fc.webQueryParameters(), { nil: undefined }),
        (host, port, path, q) => {
          const url = `http://user:pw@${host}${port ? `:${port}` : ""}${path || "/"}${q ? `?${q}` : ""}`;
          const v = parseHttpProxyHead(
            b(
              `GET ${url} HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: Basic eA==\r\nproxy-connection: keep-alive\r\nAccept: */*\r\n\r\nBODY`,
            ),
          );
          expect(v.kind).toBe("forward");
          if (v.kind !== "forward") return;
          const u = new URL(url);
          // userinfo is never the host: `http://allowed@evil/` goes to evil and is judged as evil.
          expect(v.host).toBe(u.hostname);
          expect(v.port).toBe(port ?? 80);
          const text = v.head.toString("latin1");
          expect(text.startsWith(`GET ${u.pathname}${u.search} HTTP/1.1\r\n`)).toBe(true);
          expect(text).not.toMatch(/proxy-/i);
          expect(text).toContain("\r\nAccept: */*\r\n\r\n");
          expect(v.rest.toString()).toBe("BODY");
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe("SOCKS5", () => {
  const req = (atyp: number, addr: number[], port: number) =>
    Buffer.from([5, 1, 0, atyp, ...addr, port >> 8, port & 255]);

  it("reads IPv4, IPv6 and domain requests whole, and every proper prefix is incomplete", () => {
    const target = fc.oneof(
      fc.ipV4().map((h) => ({ bytes: req(1, h.split(".").map(Number), 0), want: h })),
      fc
        .ipV6()
        .map((h) => ({ bytes: req(4, ipaddr.IPv6.parse(h).toByteArray(), 0), want: ipaddr.IPv6.parse(h).toString() })),
      fc
        .domain()
        .filter((d) => d.length <= 255)
        .map((d) => ({ bytes: req(3, [d.length, ...Buffer.from(d)], 0), want: d })),
    );
    fc.assert(
      fc.property(target, fc.integer({ min: 1, max: 65535 }), fc.uint8Array({ maxLength: 20 }), (t, port, tail) => {
        const bytes = Buffer.from(t.bytes);
        bytes.writeUInt16BE(port, bytes.length - 2);
        const v = parseSocksRequest(Buffer.concat([bytes, tail]));
        expect(v).toEqual({ kind: "ok", consumed: bytes.length, host: t.want, port });
        for (let cut = 0; cut < bytes.length; cut++)
          expect(parseSocksRequest(bytes.subarray(0, cut)).kind).toBe("incomplete");
      }),
      { numRuns: RUNS },
    );
  });

  it("answers what it does not do with the RFC's codes, and never throws", () => {
    expect(parseSocksRequest(Buffer.from([5, 2, 0, 1, 1, 2, 3, 4, 0, 80]))).toMatchObject({
      kind: "bad",
      reply: SOCKS.COMMAND_NOT_SUPPORTED,
    });
    expect(parseSocksRequest(Buffer.from([5, 3, 0, 1, 1, 2, 3, 4, 0, 80]))).toMatchObject({
      kind: "bad",
      reply: SOCKS.COMMAND_NOT_SUPPORTED,
    });
    expect(parseSocksRequest(Buffer.from([5, 1, 0, 9, 1, 2, 3, 4, 0, 80]))).toMatchObject({
      kind: "bad",
      reply: SOCKS.ADDRESS_NOT_SUPPORTED,
    });
    expect(parseSocksRequest(Buffer.from([4, 1, 0, 1, 1, 2, 3, 4, 0, 80]))).toMatchObject({ kind: "bad" });
    expect(parseSocksRequest(Buffer.from([5, 1, 0, 3, 0, 0, 80]))).toMatchObject({ kind: "bad" });
    expect(parseSocksRequest(Buffer.from([5, 1, 0, 1, 1, 2, 3, 4, 0, 0]))).toMatchObject({ kind: "bad" });
    expect(parseSocksGreeting(Buffer.from([5, 0]))).toMatchObject({ kind: "bad" });
    expect(parseSocksGreeting(Buffer.from([5, 2, 1, 2]))).toMatchObject({ kind: "ok", noAuth: false });
    expect(parseSocksGreeting(Buffer.from([5, 3, 1, 0]))).toEqual({ kind: "incomplete" });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const v = parseSocksRequest(Buffer.from(bytes));
        if (v.kind === "ok") expect(v.consumed).toBeLessThanOrEqual(bytes.length);
        parseSocksGreeting(Buffer.from(bytes));
      }),
      { numRuns: RUNS * 4 },
    );
  });
});

/** The proxy's lookup as server.ts makes it: its net_proxy keys as the destination policy's scope. */
function checkedAddress(
  host: string,
  cfg: { addresses: Record<string, string>; allow_private_hosts: string[]; connect_timeout_ms: number },
  resolve?: Resolver,
) {
  const scope = {
    allowPrivateHosts: cfg.allow_private_hosts,
    addresses: cfg.addresses,
    who: "commands reach",
    allowKey: "k",
  };
  const lookup = { signal: new AbortController().signal, timeoutMs: cfg.connect_timeout_ms };
  return destinationAddress(host, scope, resolve ? { ...lookup, resolve } : lookup);
}

describe("destinations: one spelling, and no private address without the operator", () => {
  const cfg = { addresses: {}, allow_private_hosts: [] as string[], connect_timeout_ms: 1000 };
  const LOOPBACK_SPELLINGS = [
    "127.0.0.1",
    "0x7f.1",
    "0x7f000001",
    "2130706433",
    "127.1",
    "0177.0.0.1",
    "127.0.0.1.",
    "[::ffff:127.0.0.1]",
    "::ffff:7f00:1",
    "[64:ff9b::7f00:1]",
    "[::1]",
    "::",
    "0.0.0.0",
    "user@127.0.0.1",
    "127.0.0.1:8080",
  ];

  it("refuses every spelling of loopback as net:private, and allows each once the operator names it in any spelling", async () => {
    for (const raw of LOOPBACK_SPELLINGS) {
      const host = canonicalDestination(raw);
      const err = await checkedAddress(host, cfg).catch((e: unknown) => e);
      expect(err, raw).toBeInstanceOf(DestinationRefused);
      expect((err as DestinationRefused).rule).toBe("net:private");
      const lifted = await checkedAddress(host, { ...cfg, allow_private_hosts: [raw] });
      expect(lifted.address, raw).toBeTruthy();
    }
  });

  it("judges names by every address DNS gives, and an operator's mapping instead of DNS", async () => {
    const dns = (addrs: string[]) => async () =>
      addrs.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
    await expect(checkedAddress("mixed.test", cfg, dns(["93.184.216.34", "10.0.0.1"]))).rejects.toMatchObject({
      rule: "net:private",
    });
    await expect(checkedAddress("v6.test", cfg, dns(["::ffff:169.254.169.254"]))).rejects.toMatchObject({
      rule: "net:private",
    });
    await expect(checkedAddress("ok.test", cfg, dns(["93.184.216.34"]))).resolves.toEqual({
      address: "93.184.216.34",
      family: 4,
    });
    await expect(checkedAddress("none.test", cfg, dns([]))).rejects.toMatchObject({ rule: "net:unresolved" });
    const never = () => new Promise<never>(() => {});
    await expect(checkedAddress("slow.test", { ...cfg, connect_timeout_ms: 50 }, never)).rejects.toMatchObject({
      rule: "net:unresolved",
    });
    const mapped = { ...cfg, addresses: { "Local.TEST.": "127.0.0.1" } };
    await expect(checkedAddress("local.test", mapped, never)).rejects.toMatchObject({ rule: "net:private" });
    await expect(
      checkedAddress("local.test", { ...mapped, allow_private_hosts: ["local.test"] }, never),
    ).resolves.toEqual({ address: "127.0.0.1", family: 4 });
  });

  it("refuses what is no host: NUL, spaces, slashes, an empty name, 64-letter labels", () => {
    for (const raw of [
      "a\0b.test",
      "a b.test",
      "a/b.test",
      "evil.test/allowed.test",
      "a\\b.test",
      "a?b",
      "a#b",
      "a\tb",
      "",
      ".",
      "a..b",
      `${"x".repeat(64)}.test`,
      "%00.test",
    ]) {
      expect(() => canonicalDestination(raw), JSON.stringify(raw)).toThrow(DestinationRefused);
    }
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 60 }), (raw) => {
        try {
          const h = canonicalDestination(raw);
          expect(h).toMatch(/^[a-z0-9_.:-]+$/);
        } catch (e) {
          expect(e).toBeInstanceOf(DestinationRefused);
        }
      }),
      { numRuns: RUNS * 4 },
    );
  });
});

describe("the per-command allow decision", () => {
  const rules: PolicyRule[] = [
    { name: "cmds", tool: "run_command", effect: "allow" },
    { name: "npm", tool: "run_command", effect: "allow", hosts: ["registry.npmjs.org"] },
    { name: "sub", tool: "run_command", effect: "allow", hosts: ["*.example.org"] },
    { name: "no-bad", tool: "run_command", effect: "deny", hosts: ["bad.example.org"] },
    { name: "git-only", tool: "run_command", effect: "allow", hosts: ["github.com"], command_prefixes: ["git fetch"] },
  ];
  const spellings = (h: string) =>
    fc
      .tuple(
        fc.array(fc.boolean(), { minLength: h.length, maxLength: h.length }),
        fc.constantFrom("", ".", ".."),
        fc.constantFrom("", "u@", "u:p@"),
      )
      .map(([up, dot, user]) => `${user}${[...h].map((c, i) => (up[i] ? c.toUpperCase() : c)).join("")}${dot}`);

  it("allows the registry in any spelling, refuses hosts no rule names, and a deny wins", () => {
    fc.assert(
      fc.property(spellings("registry.npmjs.org"), spellings("bad.example.org"), (good, bad) => {
        expect(connectionDecision(rules, canonicalDestination(good), "npm install")).toEqual({
          effect: "allow",
          rule: "npm",
        });
        expect(connectionDecision(rules, canonicalDestination(bad), "npm install")).toEqual({
          effect: "deny",
          rule: "no-bad",
        });
      }),
      // Each decision parses the command line (mvdan/sh): fewer runs, the spellings are few.
      { numRuns: 100 },
    );
    expect(connectionDecision(rules, "registry.npmjs.org.evil.test", "npm install").rule).toBe("net:no-rule");
    expect(connectionDecision(rules, "example.org", "curl x").effect).toBe("deny");
    expect(connectionDecision(rules, "a.example.org", "curl x")).toEqual({ effect: "allow", rule: "sub" });
  });

  it("scopes a host to the commands its rule names, and asks where the parser cannot see the command", () => {
    expect(connectionDecision(rules, "github.com", "git fetch origin").effect).toBe("allow");
    expect(connectionDecision(rules, "github.com", "curl https://github.com/").rule).toBe("net:no-rule");
    expect(connectionDecision(rules, "registry.npmjs.org", 'sh -c "$X"')).toEqual({
      effect: "ask",
      rule: "command:opaque",
    });
  });
});
